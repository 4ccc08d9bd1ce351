/* mempalace ui: the map's graph (cytoscape.js, vendored) and its side panel, and the
   "back" links. Everything else on the pages is plain HTML forms and links.
   Two kinds of tunnel are drawn: a room filed in several wings (one node, an edge to each
   of its wings) and an explicit tunnel someone made (`mempalace tunnels create`, the MCP
   mempalace_create_tunnel tool): a dashed edge between its two rooms, labelled with its note. */
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
  function linkId(link) { return "link:" + link.id; }

  /* Where each (wing, room) is drawn: its room node (a shared room is one node). */
  var nodeAt = {};
  var roomOfNode = {};
  data.rooms.forEach(function (r) {
    roomOfNode[roomId(r)] = r;
    r.wings.forEach(function (w) { nodeAt[w + "\u001f" + r.room] = roomId(r); });
  });
  function nodeOf(end) { return nodeAt[end.wing + "\u001f" + end.room]; }
  var links = (data.links || []).filter(function (l) { return nodeOf(l.source) && nodeOf(l.target); });
  var linkById = {};
  links.forEach(function (l) { linkById[l.id] = l; });
  function short(label) {
    if (!label) return "";
    return label.length > 40 ? label.slice(0, 39) + "\u2026" : label;
  }
  function size(drawers) { return Math.round(22 + 9 * Math.sqrt(Math.max(drawers, 1))); }

  /* The drawers of `room` in `wing`, from the server, into the panel's list part. */
  function loadRoom(target, wing, room) {
    target.textContent = words.loading;
    var url = "/room?panel=1&wing=" + encodeURIComponent(wing) + "&room=" + encodeURIComponent(room);
    fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { return r.text(); })
      .then(function (html) { target.innerHTML = html; });
  }

  /* The explicit tunnels with an end in this room (of any of `wings`): where each leads. */
  function linksHere(room, wings) {
    var here = [];
    links.forEach(function (l) {
      [["source", "target"], ["target", "source"]].forEach(function (pair) {
        var near = l[pair[0]], far = l[pair[1]];
        if (near.room === room && wings.indexOf(near.wing) >= 0) here.push({ link: l, near: near, far: far });
      });
    });
    if (!here.length) return null;
    var box = document.createElement("div");
    box.id = "panel-links";
    box.appendChild(text("p", words.links_here, "hint"));
    var ul = document.createElement("ul");
    ul.className = "plain follow";
    here.forEach(function (h) {
      var li = document.createElement("li");
      var a = text("a", say(words.link_go, { place: h.far.wing + " / " + h.far.room }), "link-follow");
      a.href = "#";
      a.dataset.wing = h.far.wing;
      a.dataset.room = h.far.room;
      a.dataset.link = h.link.id;
      a.addEventListener("click", function (event) {
        event.preventDefault();
        followTo(h.far);
      });
      li.appendChild(a);
      if (h.link.label) li.appendChild(text("span", " \u2014 " + h.link.label, "meta"));
      ul.appendChild(li);
    });
    box.appendChild(ul);
    return box;
  }

  /* Arrive at one end of a tunnel: its room selected, its drawers listed. */
  function followTo(end) {
    var id = nodeOf(end);
    var room = roomOfNode[id];
    focusNode(id);
    showRoom(end.room, room ? room.wings : [end.wing], end.wing);
  }

  function showLink(link) {
    panel.innerHTML = "";
    var list = document.createElement("div");
    list.id = "panel-drawers";
    panel.appendChild(text("h3", words.link, "link-title"));
    var label = text("p", link.label || words.no_label, "link-label");
    label.id = "link-label";
    panel.appendChild(label);
    var ul = document.createElement("ul");
    ul.className = "plain follow";
    ["source", "target"].forEach(function (which) {
      var end = link[which];
      var li = document.createElement("li");
      var a = text("a", say(words.link_go, { place: end.wing + " / " + end.room }), "link-end");
      a.href = "#";
      a.dataset.end = which;
      a.dataset.wing = end.wing;
      a.dataset.room = end.room;
      a.addEventListener("click", function (event) {
        event.preventDefault();
        focusNode(nodeOf(end));
        loadRoom(list, end.wing, end.room);
      });
      li.appendChild(a);
      if (end.drawer_id) {
        var d = text("a", words.link_drawer, "link-drawer");
        d.href = "/drawer/" + encodeURIComponent(end.drawer_id);
        li.appendChild(text("span", " \u00b7 ", "meta"));
        li.appendChild(d);
      }
      ul.appendChild(li);
    });
    panel.appendChild(ul);
    panel.appendChild(list);
  }

  function showRoom(room, wings, viaWing) {
    panel.innerHTML = "";
    var list = document.createElement("div");
    list.id = "panel-drawers";
    var here = linksHere(room, wings);
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
      if (here) panel.appendChild(here);
      panel.appendChild(list);
      loadRoom(list, viaWing || wings[0], room);
    } else {
      if (here) panel.appendChild(here);
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
    if (!cy || !id) return;
    var node = cy.getElementById(id);
    if (!node || node.empty()) return;
    cy.$(":selected").unselect();
    node.select();
    cy.animate({ center: { eles: node } }, { duration: 250 });
  }
  function focusLink(link) {
    if (!cy) return;
    var edge = cy.getElementById(linkId(link));
    if (!edge || edge.empty()) return;
    cy.$(":selected").unselect();
    edge.select();
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
  each(".link-link", function (a) {
    a.addEventListener("click", function (event) {
      event.preventDefault();
      var link = linkById[a.dataset.link];
      if (!link) return;
      focusLink(link);
      showLink(link);
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
  links.forEach(function (l) {
    elements.push({
      group: "edges",
      data: { id: linkId(l), source: nodeOf(l.source), target: nodeOf(l.target), label: short(l.label), kind: "link", link: l.id },
      classes: "link"
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
      { selector: "edge.link", style: { width: 3, "line-color": "#8a4fc9", "line-style": "dashed", label: "data(label)", "font-size": 10, color: "#5b2a8c", "text-rotation": "autorotate", "text-background-color": "#ffffff", "text-background-opacity": 0.85, "text-background-padding": 2, "loop-direction": "-45deg", "loop-sweep": "-90deg" } },
      { selector: "edge.link:selected", style: { "line-color": "#2f6fd1", width: 4 } },
      { selector: ":selected", style: { "overlay-color": "#2f6fd1", "overlay-opacity": 0.18, "border-color": "#2f6fd1", "border-width": 4 } }
    ],
    layout: { name: "cose", animate: false, randomize: true, nodeRepulsion: function () { return 9000; }, idealEdgeLength: function () { return 70; }, padding: 24 }
  });
  cy.on("tap", "edge.link", function (event) {
    var link = linkById[event.target.data("link")];
    focusLink(link);
    showLink(link);
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
