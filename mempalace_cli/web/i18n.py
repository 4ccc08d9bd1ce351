"""Every string the pages show, in English and Chinese, in this one catalogue.

The language: `?lang=en|zh` (the switch in the page's header, remembered in a cookie), else
that cookie, else the browser's Accept-Language (the first of our languages it names, by
weight), else English. Texts take named values (`{n}`, `{wing}`), filled by `Translator`; the
templates escape what comes out. What the service says (an error's message and hint) stays in
its own words, as the CLI shows it.
"""

from __future__ import annotations

LANGUAGES = ("en", "zh")
DEFAULT = "en"

# key: (English, 中文)
CATALOGUE: dict[str, tuple[str, str]] = {
    # the frame
    "app.name": ("mempalace", "记忆宫殿"),
    "app.read_only": ("read-only", "只读"),
    "app.read_only_title": (
        "Started with --read-only: nothing can be changed from this page.",
        "以 --read-only 启动：此页面不能做任何修改。",
    ),
    "app.footer": ("Palace: {path}", "宫殿：{path}"),
    "nav.map": ("Map", "地图"),
    "nav.search": ("Search", "搜索"),
    "nav.kg": ("Knowledge graph", "知识图谱"),
    "nav.diaries": ("Diaries", "日记"),
    "nav.health": ("Health", "健康"),
    "nav.activity": ("Activity", "活动"),
    "common.wing": ("Wing", "翼"),
    "common.room": ("Room", "房间"),
    "common.source": ("Source", "来源"),
    "common.drawers": ("{n} drawers", "{n} 个抽屉"),
    "common.loading": ("Loading…", "加载中…"),
    "common.more": ("More", "更多"),
    "common.newer": ("Newer", "较新"),
    "common.older": ("Older", "较早"),
    "common.showing": ("{first}–{last} of {total}", "第 {first}–{last} 个，共 {total} 个"),
    # map
    "map.title": ("Map of the palace", "宫殿地图"),
    "map.summary": (
        "Drawers: {drawers} · wings: {wings} · rooms: {rooms} · tunnels between wings: {tunnels}"
        " · explicit tunnels: {links}",
        "抽屉：{drawers} · 翼：{wings} · 房间：{rooms} · 连接各翼的隧道：{tunnels}"
        " · 显式隧道：{links}",
    ),
    "map.empty": (
        "This palace has no drawers yet. File some with: mempalace mine <folder>",
        "这个宫殿还没有抽屉。先用 mempalace mine <文件夹> 归档一些内容。",
    ),
    "map.graph_label": (
        "Graph of wings and rooms; rooms are sized by their drawers",
        "翼与房间的关系图；房间大小表示抽屉数量",
    ),
    "map.key_wing": ("wing", "翼"),
    "map.key_room": ("room", "房间"),
    "map.key_tunnel": ("tunnel (a room in several wings)", "隧道（出现在多个翼中的房间）"),
    "map.key_link": (
        "explicit tunnel (made with mempalace tunnels create)",
        "显式隧道（用 mempalace tunnels create 建立）",
    ),
    "map.key_isolated": ("isolated", "孤立"),
    "map.how": (
        "Drag to pan, scroll to zoom, click a room to list its drawers, click a dashed line to "
        "follow an explicit tunnel.",
        "拖动平移，滚轮缩放，点击房间查看其中的抽屉，点击虚线沿显式隧道前往另一端。",
    ),
    "map.hidden": (
        "{n} smaller rooms are not drawn (the {shown} biggest are); find them with Search.",
        "还有 {n} 个较小的房间未画出（只画了最大的 {shown} 个）；可以用搜索找到它们。",
    ),
    "map.panel_hint": (
        "Click a room or a wing on the map, or a name below.",
        "点击地图上的房间或翼，或下面列出的名字。",
    ),
    "map.tunnels": ("Tunnels", "隧道"),
    "map.joins": ("joins {wings}", "连接 {wings}"),
    "map.no_tunnels": (
        "No tunnels: no room name is filed in two wings.",
        "没有隧道：没有哪个房间名同时出现在两个翼中。",
    ),
    "map.links": ("Explicit tunnels", "显式隧道"),
    "map.links_what": (
        "Links between two rooms (or two drawers in them) that a person or an agent made on "
        "purpose, with an optional note.",
        "由人或智能体特意建立的两个房间（或其中两个抽屉）之间的链接，可以附一句说明。",
    ),
    "map.no_links": (
        "No explicit tunnels yet. Link two rooms with: mempalace tunnels create WING/ROOM "
        'WING/ROOM --label "why they belong together"',
        "还没有显式隧道。用这个命令连接两个房间：mempalace tunnels create 翼/房间 翼/房间 "
        '--label "两者的关系"',
    ),
    "map.links_dangling": (
        "Explicit tunnels leading to a room that holds no drawers any more: {n}. Remove them "
        "with: mempalace tunnels prune --yes",
        "通向已经没有抽屉的房间的显式隧道：{n} 条。可以用 mempalace tunnels prune --yes 删除它们。",
    ),
    "map.link_drawer_gone": (
        "A drawer this tunnel names was forgotten; it still links the two rooms.",
        "这条隧道指向的某个抽屉已被删除；它仍然连接这两个房间。",
    ),
    "map.isolated": ("Isolated", "孤立"),
    "map.isolated_what": (
        "A wing that shares no room with another wing; a room that is the only room of its "
        "wing and no tunnel.",
        "孤立的翼：与其他翼没有共同的房间；孤立的房间：所在翼只有它一个房间，且不是隧道。",
    ),
    "map.isolated_wing": ("wing", "翼"),
    "map.isolated_room": ("room", "房间"),
    "map.none_isolated": ("Nothing stands alone.", "没有孤立的翼或房间。"),
    "map.wings": ("Wings", "各翼"),
    "map.rooms": ("Rooms", "房间"),
    "map.drawers": ("Drawers", "抽屉"),
    "map.js_drawers": ("drawers", "个抽屉"),
    "map.js_tunnel": ("Tunnel: this room is filed in {wings}.", "隧道：这个房间出现在 {wings}。"),
    "map.js_follow": ("Follow the tunnel to {wing}", "沿隧道前往 {wing}"),
    "map.js_rooms_of": ("Rooms of {wing}", "{wing} 的房间"),
    "map.js_link": ("Explicit tunnel", "显式隧道"),
    "map.js_link_go": ("Go to {place}", "前往 {place}"),
    "map.js_link_drawer": ("open the drawer it names", "打开它指向的抽屉"),
    "map.js_links_here": ("Explicit tunnels from this room:", "从这个房间出发的显式隧道："),
    "map.js_no_label": ("(no note)", "（没有说明）"),
    "room.count": ("{n} drawers, newest first.", "{n} 个抽屉，最新的在前。"),
    "room.all": ("All {n} drawers →", "全部 {n} 个抽屉 →"),
    "room.any_wing": ("every wing", "所有翼"),
    "room.any_room": ("every room", "所有房间"),
    # search
    "search.title": ("Search", "搜索"),
    "search.placeholder": ("What are you looking for?", "想找什么？"),
    "search.go": ("Search", "搜索"),
    "search.filters": ("Filters", "筛选"),
    "search.since": ("Since", "起始日期"),
    "search.before": ("Before", "截止日期（不含）"),
    "search.date_example": ("2026-03-01 or last month", "2026-03-01 或 上个月"),
    "search.dates_hint": (
        "Dates are those of what a drawer records: ISO dates (2026-03-01) or words such as "
        "'last month', 'this week', 上个月.",
        "日期指抽屉所记内容的日期：可写 ISO 日期（2026-03-01），也可写“上个月”“本周”、"
        "last month 等说法。",
    ),
    "search.mode": ("Ranking", "排序方式"),
    "search.mode_hybrid": ("hybrid (meaning and words)", "混合（语义与关键词）"),
    "search.mode_vector": ("meaning only", "仅语义"),
    "search.mode_lexical": ("words only", "仅关键词"),
    "search.results": ("Results for “{q}”: {n}.", "“{q}” 的结果：{n} 条。"),
    "search.intro": (
        "Search finds drawers by meaning and by words at once, in English and Chinese.",
        "搜索同时按语义和关键词查找抽屉，中英文皆可。",
    ),
    "search.time_named": (
        "The query names a time ({named}): drawers dated {since} to {before} come first.",
        "查询中提到了时间（{named}）：日期在 {since} 至 {before} 之间的抽屉排在前面。",
    ),
    "search.similarity": ("similarity", "相似度"),
    "search.found_by": ("found by", "命中方式"),
    "search.side_vector": ("meaning", "语义"),
    "search.side_lexical": ("words", "关键词"),
    "search.side_translated": ("translation", "翻译"),
    # drawer
    "drawer.title": ("Drawer", "抽屉"),
    "drawer.neighbours": ("Around it in its file", "同一文件中的前后内容"),
    "drawer.position": (
        "Part {at} of {total} of its file.",
        "它是所在文件 {total} 段中的第 {at} 段。",
    ),
    "drawer.line": ("line {n}", "第 {n} 行"),
    "drawer.this_one": ("this drawer", "当前抽屉"),
    "drawer.alone": ("No other drawer comes from the same file.", "没有其他抽屉来自同一文件。"),
    "drawer.facts": ("Facts that cite it", "引用它的事实"),
    "drawer.no_facts": ("No fact names this drawer as its source.", "没有事实以这个抽屉为来源。"),
    "drawer.about": ("About", "详情"),
    "drawer.filed": ("Filed", "归档时间"),
    "drawer.change": ("Change", "修改"),
    "drawer.move": ("Move…", "移动…"),
    "drawer.edit": ("Edit the text", "编辑文本"),
    "drawer.save": ("Save…", "保存…"),
    "drawer.forget": ("Forget this drawer…", "删除这个抽屉…"),
    "drawer.confirm_hint": (
        "Each change is shown for confirmation first.",
        "每项修改都会先请你确认。",
    ),
    # confirmations and results
    "confirm.title": ("Please confirm", "请确认"),
    "confirm.yes": ("Yes, do it", "确定执行"),
    "confirm.no": ("Cancel", "取消"),
    "confirm.nothing_yet": (
        "Nothing has changed yet.",
        "目前还没有做任何修改。",
    ),
    "confirm.forget": (
        "Forget drawer {id}? It is removed from the palace for good (mining its file again "
        "files it again).",
        "要删除抽屉 {id} 吗？它将从宫殿中永久移除（重新 mine 它的文件会再次归档）。",
    ),
    "confirm.move": (
        "Move drawer {id} from {place} to {to}?",
        "把抽屉 {id} 从 {place} 移到 {to}？",
    ),
    "confirm.edit": (
        "Replace the text of drawer {id} with this? It is embedded and indexed again.",
        "用下面的文本替换抽屉 {id} 的内容吗？它会重新计算向量并建立索引。",
    ),
    "confirm.duplicates": (
        "Keep {keep} and forget the {n} drawers below?",
        "保留 {keep}，删除下面 {n} 个抽屉？",
    ),
    "confirm.kg_add": (
        "Record the fact: {subject} {predicate} {object}?",
        "记录事实：{subject} {predicate} {object}？",
    ),
    "confirm.kg_invalidate": (
        "End the fact {subject} {predicate} {object}? It stays in its history.",
        "结束事实 {subject} {predicate} {object}？它仍会保留在历史中。",
    ),
    "confirm.kg_supersede": (
        "Replace {subject} {predicate} {object} by {new_object}? The old fact ends, the new "
        "one starts the same day.",
        "用 {new_object} 取代 {subject} {predicate} {object}？旧事实结束，新事实同日开始。",
    ),
    "done.title": ("Done", "已完成"),
    "done.forgot": ("Drawers forgotten: {n}.", "已删除 {n} 个抽屉。"),
    "done.moved": ("The drawer is now in {wing} / {room}.", "抽屉已移到 {wing} / {room}。"),
    "done.edited": ("The drawer's text was saved.", "抽屉的文本已保存。"),
    "done.back_to_drawer": ("Back to the drawer", "返回抽屉"),
    "done.kept": ("The drawer kept", "保留的抽屉"),
    "dup.pick_one": (
        "Pick the one drawer of the group to keep.",
        "请从这一组中选出要保留的一个抽屉。",
    ),
    "error.title": ("That did not work", "操作未成功"),
    "error.hint": ("What to do:", "建议："),
    "error.back": ("Back", "返回"),
    "refused.title": ("Refused", "已拒绝"),
    "refused.read_only": (
        "This page was started with --read-only: nothing was changed.",
        "此页面以 --read-only 启动：没有做任何修改。",
    ),
    "refused.read_only_hint": (
        "Restart it without --read-only (mempalace ui), or change the palace from the "
        "command line (mempalace forget, mempalace kg).",
        "去掉 --read-only 重新启动（mempalace ui），或在命令行中修改（mempalace forget、"
        "mempalace kg）。",
    ),
    "refused.csrf": (
        "This change was refused: the form did not come from this page (its CSRF check "
        "failed). Nothing was changed.",
        "已拒绝这次修改：表单不是来自本页面（CSRF 校验未通过）。没有做任何修改。",
    ),
    "refused.csrf_hint": (
        "Reload the page and submit the form again.",
        "请刷新页面后重新提交表单。",
    ),
    "refused.cross_site": (
        "This change was refused: it was sent by another site. Nothing was changed.",
        "已拒绝这次修改：请求来自其他网站。没有做任何修改。",
    ),
    "refused.cross_site_hint": (
        "Make changes from the pages of mempalace ui itself.",
        "请在 mempalace ui 自己的页面上进行修改。",
    ),
    "login.title": ("Token needed", "需要令牌"),
    "login.why": (
        "This palace is served on a network address, so it asks for the token it was "
        "started with (--token or MEMPALACE_UI_TOKEN).",
        "这个宫殿在网络地址上提供服务，需要输入启动时设置的令牌（--token 或 MEMPALACE_UI_TOKEN）。",
    ),
    "login.wrong": ("That is not the token. Try again.", "令牌不正确，请重试。"),
    "login.token": ("Token", "令牌"),
    "login.go": ("Open the palace", "进入宫殿"),
    # knowledge graph
    "kg.title": ("Knowledge graph", "知识图谱"),
    "kg.find": ("Find an entity", "查找实体"),
    "kg.find_placeholder": ("a name", "名称"),
    "kg.entities": ("{n} entities", "{n} 个实体"),
    "kg.no_facts": (
        "No facts yet. Record one below, or with: mempalace kg add SUBJECT PREDICATE OBJECT",
        "还没有事实。可在下方添加，或使用：mempalace kg add 主语 谓语 宾语",
    ),
    "kg.intro": (
        "Pick an entity to see its facts over time: what holds now, what ended, what "
        "replaced what.",
        "选择一个实体，查看它的事实随时间的变化：哪些现在成立，哪些已结束，哪个取代了哪个。",
    ),
    "kg.as_of": ("As of", "截至"),
    "kg.show": ("Show", "显示"),
    "kg.all_time": ("all time", "全部时间"),
    "kg.summary": ("Facts: {n}, current: {current}.", "共 {n} 条事实，{current} 条当前有效。"),
    "kg.held_on": (
        "{n} of {total} facts held on {date} (highlighted).",
        "{total} 条事实中有 {n} 条在 {date} 成立（已高亮）。",
    ),
    "kg.unknown": ("No facts about {name}.", "没有关于 {name} 的事实。"),
    "kg.did_you_mean": ("Did you mean:", "你是不是要找："),
    "kg.always": ("always", "一直"),
    "kg.now": ("now", "至今"),
    "kg.current": ("current", "当前"),
    "kg.ended": ("ended", "已结束"),
    "kg.replaced_by": ("replaced by {object}", "被 {object} 取代"),
    "kg.replaces": ("replaces {object}", "取代了 {object}"),
    "kg.source_drawer": ("source drawer", "来源抽屉"),
    "kg.learned": ("recorded {when}", "记录于 {when}"),
    "kg.change": ("Change…", "修改…"),
    "kg.ended_on": ("Last day", "最后一天"),
    "kg.invalidate": ("End this fact…", "结束这条事实…"),
    "kg.new_object": ("New value", "新的宾语"),
    "kg.from": ("From", "开始日期"),
    "kg.supersede": ("Replace…", "取代…"),
    "kg.add": ("Record a fact", "记录一条事实"),
    "kg.add_go": ("Record…", "记录…"),
    "kg.subject": ("Subject", "主语"),
    "kg.predicate": ("Predicate", "谓语"),
    "kg.object": ("Object", "宾语"),
    "kg.source_id": ("Source drawer (optional)", "来源抽屉（可选）"),
    "kg.need": ("The {field} is empty.", "{field}不能为空。"),
    "kg.need_hint": (
        "A fact needs a subject, a predicate and an object.",
        "一条事实需要主语、谓语和宾语。",
    ),
    # diaries
    "diaries.title": ("Diaries", "日记"),
    "diaries.none": (
        "No diary yet. Agents write one with the mempalace_diary_write tool, or: "
        "mempalace diary write AGENT TEXT",
        "还没有日记。智能体可以用 mempalace_diary_write 工具写日记，或使用："
        "mempalace diary write 智能体 内容",
    ),
    "diaries.entries": ("{n} entries", "{n} 篇"),
    "diaries.search": ("Search this diary", "在这本日记中搜索"),
    "diaries.all": ("all entries", "全部日记"),
    "diaries.open": ("open", "打开"),
    # health
    "health.title": ("Health of the palace", "宫殿健康状况"),
    "health.agreement": ("Index and store", "索引与存储"),
    "health.in_step": (
        "The catalogue mirrors the drawer store ({n} drawers).",
        "目录与抽屉存储一致（{n} 个抽屉）。",
    ),
    "health.not_in_step": (
        "The catalogue ({n} drawers) is not known to mirror the store; the next search or "
        "`mempalace status` repairs it from the store.",
        "无法确认目录（{n} 个抽屉）与存储一致；下一次搜索或 `mempalace status` 会从存储修复它。",
    ),
    "health.server_store": (
        "Drawers live on a Chroma server; every read compares the catalogue with it.",
        "抽屉保存在 Chroma 服务器上；每次读取都会与其比对目录。",
    ),
    "health.interrupted": (
        "A write was interrupted; the next command repairs the catalogue from the store.",
        "有一次写入被中断；下一条命令会从存储修复目录。",
    ),
    "health.last_repair": ("Last repaired {when}.", "上次修复：{when}。"),
    "health.verify_hint": (
        "To compare every drawer by content: mempalace status --verify",
        "逐个按内容比对所有抽屉：mempalace status --verify",
    ),
    "health.model": ("Embedding model", "嵌入模型"),
    "health.dimension": ("{n} dimensions", "{n} 维"),
    "health.recorded_recorded": ("Recorded in the palace.", "已记录在宫殿中。"),
    "health.recorded_server": ("Recorded on the Chroma server.", "已记录在 Chroma 服务器上。"),
    "health.recorded_mempalace": (
        "A palace made by MemPalace (all-MiniLM-L6-v2).",
        "由 MemPalace 创建的宫殿（all-MiniLM-L6-v2）。",
    ),
    "health.recorded_legacy": (
        "Drawers from before models were recorded (all-MiniLM-L6-v2).",
        "记录模型之前归档的抽屉（all-MiniLM-L6-v2）。",
    ),
    "health.recorded_new": (
        "Nothing filed yet: the default model will be recorded with the first drawer.",
        "尚未归档任何内容：第一个抽屉归档时会记录默认模型。",
    ),
    "health.disk": ("Disk use", "磁盘占用"),
    "health.part_drawer_store": ("drawer store (Chroma)", "抽屉存储（Chroma）"),
    "health.part_catalogue": ("catalogue and keyword index", "目录与关键词索引"),
    "health.part_vector_index": ("vector index", "向量索引"),
    "health.part_knowledge_graph": ("knowledge graph", "知识图谱"),
    "health.part_activity_log": ("MCP activity log", "MCP 活动日志"),
    "health.part_other": ("other", "其他"),
    "health.total": ("total", "合计"),
    "health.duplicates": ("Duplicates", "重复的抽屉"),
    "health.duplicates_what": (
        "Drawers that say the same words in the same order (case, punctuation and spacing "
        "aside). Keep one, forget the rest.",
        "用词和顺序完全相同的抽屉（忽略大小写、标点和空白）。保留一个，删除其余的。",
    ),
    "health.reading": (
        "Still comparing drawers: {read} of {total} read. Reload in a moment.",
        "仍在比对抽屉：已读取 {read} / {total}。请稍后刷新。",
    ),
    "health.reload": ("Reload", "刷新"),
    "health.no_duplicates": ("No duplicates among {n} drawers.", "{n} 个抽屉中没有重复。"),
    "health.duplicate_groups": (
        "Groups of duplicates: {groups} ({extra} drawers could go).",
        "{groups} 组重复（可删除 {extra} 个抽屉）。",
    ),
    "health.keep_one": ("Keep the chosen one, forget the others…", "保留选中的，删除其余…"),
    "health.stale": ("Stale drawers", "过时的抽屉"),
    "health.stale_what": (
        "Drawers that are the source of a fact that has since ended or been replaced: what "
        "they say may be out of date.",
        "这些抽屉是某条事实的来源，而该事实已结束或被取代：其内容可能已过时。",
    ),
    "health.no_stale": (
        "No drawer is the source of an ended fact.",
        "没有抽屉是已结束事实的来源。",
    ),
    "health.stale_count": ("Stale drawers: {n}.", "{n} 个过时的抽屉。"),
    "health.fact_ended": (
        "{subject} {predicate} {object} ended on {date}.",
        "{subject} {predicate} {object} 已于 {date} 结束。",
    ),
    "health.fact_now": ("Now: {now}.", "现在：{now}。"),
    "health.see_history": ("history", "历史"),
    "health.missing": ("Missing sources", "来源文件已不存在"),
    "health.missing_what": (
        "Drawers whose source file is gone from this machine ({n} source files checked).",
        "来源文件已不在本机上的抽屉（检查了 {n} 个来源文件）。",
    ),
    "health.no_missing": ("Every source file is still there.", "所有来源文件都还在。"),
    "health.missing_count": (
        "{n} files are gone; {drawers} drawers came from them.",
        "有 {n} 个文件已不存在；{drawers} 个抽屉来自这些文件。",
    ),
    "health.missing_fix": (
        "Mining the folder again removes them (mempalace mine), or forget them with "
        "mempalace forget --source PATH.",
        "重新 mine 该文件夹会移除它们（mempalace mine），或用 mempalace forget --source 路径 "
        "删除。",
    ),
    # activity
    "activity.title": ("What agents did", "智能体做了什么"),
    "activity.what": (
        "Every MCP tool call this palace's servers answered (mempalace serve-mcp), newest "
        "first: what the AI read before it answered. Arguments are short previews with "
        "secrets redacted.",
        "本宫殿的 MCP 服务器（mempalace serve-mcp）响应过的每次工具调用，最新的在前："
        "AI 在回答之前读了什么。参数只显示简短预览，密钥已隐去。",
    ),
    "activity.tool": ("Tool", "工具"),
    "activity.client": ("Client", "客户端"),
    "activity.errors_only": ("failed calls only", "只看失败的调用"),
    "activity.filter": ("Filter", "筛选"),
    "activity.none": (
        "No MCP calls recorded yet. `mempalace serve-mcp` records every call an AI client "
        "makes to this palace.",
        "还没有记录 MCP 调用。`mempalace serve-mcp` 会记录 AI 客户端对本宫殿的每次调用。",
    ),
    "activity.none_match": ("No recorded call matches these filters.", "没有符合筛选条件的调用。"),
    "activity.when": ("When", "时间"),
    "activity.arguments": ("Arguments", "参数"),
    "activity.drawers": ("Drawers returned", "返回的抽屉"),
    "activity.outcome": ("Outcome", "结果"),
    "activity.ok": ("ok", "成功"),
    "activity.unnamed": ("(unnamed client)", "（未命名客户端）"),
    "activity.more": ("Show 50 more", "再显示 50 条"),
}


def _accepted(header: str | None) -> list[str]:
    """The languages of an Accept-Language header, by weight (highest first)."""
    ranked: list[tuple[float, int, str]] = []
    for n, part in enumerate((header or "").split(",")):
        tag, _, params = part.strip().partition(";")
        weight = 1.0
        if params.strip().startswith("q="):
            try:
                weight = float(params.strip()[2:])
            except ValueError:
                weight = 0.0
        if tag and weight > 0:
            ranked.append((-weight, n, tag.strip().lower()))
    return [tag for _w, _n, tag in sorted(ranked)]


def choose(asked: str | None, remembered: str | None, accept: str | None) -> tuple[str, bool]:
    """The page's language, and whether it was just chosen (to be remembered)."""
    if asked in LANGUAGES:
        return asked, True  # type: ignore[return-value]
    if remembered in LANGUAGES:
        return remembered, False  # type: ignore[return-value]
    for tag in _accepted(accept):
        primary = tag.split("-")[0]
        if primary in LANGUAGES:
            return primary, False
    return DEFAULT, False


class Translator:
    """`t(key, **values)`: the key's text in the page's language."""

    def __init__(self, lang: str) -> None:
        self.index = LANGUAGES.index(lang) if lang in LANGUAGES else 0

    def __call__(self, key: str, **values: object) -> str:
        texts = CATALOGUE.get(key)
        if texts is None:
            return key  # never a crash on a page; tests check every key exists
        text = texts[self.index]
        return text.format(**values) if values else text


__all__ = ["CATALOGUE", "LANGUAGES", "Translator", "choose"]
