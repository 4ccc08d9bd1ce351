/* mempalace ui: the map's graph (cytoscape.js, vendored) and its side panel, and the
   "back" links. Everything else on the pages is plain HTML forms and links. */
(function () {
  "use strict";

  function each(selector, fn) {
    Array.prototype.forEach.call(document.querySelectorAll(selector), fn);
  }

  each("[data-back]", function (a) {
    a.addEventListener("click", function (event) {
      if (window.history.length > 1) {
        event.preventDefault();
        window.history.back();
      }
    });
  });

  var dataEl = document.getElementById("map-data");
  if (!dataEl) return;
  var data = JSON.parse(dataEl.textContent);
  var words = JSON.parse(document.getElementById("map-words").textContent);
  var panel = document.getElementById("map-panel");

  function say(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_m, k) { return values[k]; });
  }
  function text(tag, content, cls) {
    var el = document.createElement(tag);
    if (cls) el.className = cls;
    el.textContent = content;
    return el;
  }
  function roomId(room) { return "room:" + room.room + "@" + room.wings.join("|"); }
  function wingId(wing) { return "wing:" + wing; }
  function size(drawers) { return Math.round(22 + 9 * Math.sqrt(Math.max(drawers, 1))); }

  /* The drawers of `room` in `wing`, from the server, into the panel's list part. */
  function loadRoom(target, wing, room) {
    target.textContent = words.loading;
    var url = "/room?panel=1&wing=" + encodeURIComponent(wing) + "&room=" + encodeURIComponent(room);
    fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { return r.text(); })
      .then(function (html) { target.innerHTML = html; });
  }

  function showRoom(room, wings, viaWing) {
    panel.innerHTML = "";
    var list = document.createElement("div");
    list.id = "panel-drawers";
    if (wings.length > 1) {
      panel.appendChild(text("h3", room, "tunnel-title"));
      panel.appendChild(text("p", say(words.tunnel, { wings: wings.join(", ") }), "hint"));
      var follow = document.createElement("ul");
      follow.className = "plain follow";
      wings.forEach(function (wing) {
        var li = document.createElement("li");
        var a = text("a", say(words.follow, { wing: wing }), "follow-link");
        a.href = "#";
        a.dataset.wing = wing;
        a.addEventListener("click", function (event) {
          event.preventDefault();
          focusWing(wing);
          loadRoom(list, wing, room);
        });
        li.appendChild(a);
        follow.appendChild(li);
      });
      panel.appendChild(follow);
      panel.appendChild(list);
      loadRoom(list, viaWing || wings[0], room);
    } else {
      panel.appendChild(list);
      loadRoom(list, wings[0], room);
    }
  }

  function showWing(wing) {
    panel.innerHTML = "";
    panel.appendChild(text("h3", say(words.rooms_of, { wing: wing })));
    var ul = document.createElement("ul");
    ul.className = "plain";
    data.rooms.forEach(function (room) {
      if (room.wings.indexOf(wing) < 0) return;
      var li = document.createElement("li");
      var a = text("a", room.room, "room-link");
      a.href = "#";
      a.addEventListener("click", function (event) {
        event.preventDefault();
        focusNode(roomId(room));
        showRoom(room.room, room.wings, wing);
      });
      li.appendChild(a);
      li.appendChild(text("span", " " + (room.drawers_by_wing ? room.drawers_by_wing[wing] : room.drawers) + " " + words.drawers, "meta"));
      ul.appendChild(li);
    });
    panel.appendChild(ul);
  }

  var cy = null;
  function focusNode(id) {
    if (!cy) return;
    var node = cy.getElementById(id);
    if (!node || node.empty()) return;
    cy.$(":selected").unselect();
    node.select();
    cy.animate({ center: { eles: node } }, { duration: 250 });
  }
  function focusWing(wing) {
    focusNode(wingId(wing));
    document.body.dataset.focusWing = wing;
  }

  each(".room-link", function (a) {
    a.addEventListener("click", function (event) {
      event.preventDefault();
      var wings = a.dataset.wings.split("|");
      var room = { room: a.dataset.room, wings: wings };
      focusNode(roomId(room));
      showRoom(room.room, wings);
    });
  });
  each(".wing-link", function (a) {
    a.addEventListener("click", function (event) {
      event.preventDefault();
      focusWing(a.dataset.wing);
      showWing(a.dataset.wing);
    });
  });

  var box = document.getElementById("map");
  if (!box || !window.cytoscape) return;
  var elements = [];
  data.wings.forEach(function (w) {
    elements.push({
      group: "nodes",
      data: { id: wingId(w.wing), label: w.wing + "\n" + w.drawers, kind: "wing", wing: w.wing, size: size(w.drawers) + 16 },
      classes: "wing" + (w.isolated ? " isolated" : "")
    });
  });
  data.rooms.forEach(function (r) {
    var id = roomId(r);
    elements.push({
      group: "nodes",
      data: { id: id, label: r.room, kind: "room", room: r.room, wings: r.wings, size: size(r.drawers) },
      classes: "room" + (r.tunnel ? " tunnel" : "") + (r.isolated ? " isolated" : "") + (r.private ? " private" : "")
    });
    r.wings.forEach(function (w) {
      elements.push({ group: "edges", data: { id: "edge:" + w + ">" + id, source: wingId(w), target: id } });
    });
  });

  cy = window.cytoscape({
    container: box,
    elements: elements,
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 11, "text-valign": "center", "text-halign": "center", "text-wrap": "wrap", width: "data(size)", height: "data(size)", color: "#1f2933" } },
      { selector: "node.wing", style: { shape: "round-rectangle", "background-color": "#dbe7fb", "border-width": 2, "border-color": "#4a6fa5", "font-weight": "bold", padding: 6 } },
      { selector: "node.room", style: { shape: "ellipse", "background-color": "#eef1f5", "border-width": 1, "border-color": "#8a94a6", "text-valign": "bottom", "text-margin-y": 4 } },
      { selector: "node.tunnel", style: { "background-color": "#ffe3a3", "border-color": "#c58b00", "border-width": 3 } },
      { selector: "node.private", style: { "background-color": "#f3ecfb", "border-color": "#8a6bb5" } },
      { selector: "node.isolated", style: { "border-style": "dashed", "border-color": "#b03a2e", "border-width": 2 } },
      { selector: "edge", style: { width: 1.5, "line-color": "#c3ccd8", "curve-style": "bezier" } },
      { selector: ":selected", style: { "overlay-color": "#2f6fd1", "overlay-opacity": 0.18, "border-color": "#2f6fd1", "border-width": 4 } }
    ],
    layout: { name: "cose", animate: false, randomize: true, nodeRepulsion: function () { return 9000; }, idealEdgeLength: function () { return 70; }, padding: 24 }
  });
  cy.on("tap", "node", function (event) {
    var node = event.target;
    if (node.data("kind") === "wing") {
      focusWing(node.data("wing"));
      showWing(node.data("wing"));
    } else {
      focusNode(node.id());
      showRoom(node.data("room"), node.data("wings"));
    }
  });
  window.mempalaceMap = cy;  /* for the browser tests: where each node is drawn */
  document.body.dataset.mapReady = "1";
})();
