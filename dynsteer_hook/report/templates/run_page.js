(function () {
  "use strict";
  // Every value comes from the run's records, which agents, users and tools wrote: it is only ever set as
  // textContent or an attribute value, never parsed as markup.
  var rows = JSON.parse(document.getElementById("run-data").textContent).rows;
  var body = document.getElementById("rows");
  var count = document.getElementById("count");
  var heads = Array.prototype.slice.call(document.querySelectorAll("#runs th[data-key]"));
  var filters = {outcome: document.getElementById("f-outcome"), stop: document.getElementById("f-stop"),
                 cat: document.getElementById("f-cat"), q: document.getElementById("f-q")};
  var more = document.getElementById("more");
  var PAGE = 100;  // rows drawn at a time: laying out a thousand rows at once takes the browser a second or more
  var state = {sort: "", dir: 1, outcome: "", stop: "", cat: "", q: "", limit: PAGE};

  function fixed(v, n) { return v === null || v === undefined ? "" : Number(v).toFixed(n); }
  function td(tr, cls, text) {
    var cell = document.createElement("td");
    if (cls) cell.className = cls;
    if (text !== undefined && text !== null) cell.textContent = String(text);
    tr.appendChild(cell);
    return cell;
  }
  function sub(cell, text, limit) {
    if (!text) return;
    var s = document.createElement("span");
    s.className = "sub";
    clipped(s, text, limit);
    cell.appendChild(s);
  }
  function clipped(node, text, limit) {
    // Long free text is cut on the page and whole in the tooltip (and in the scenario's report).
    text = String(text);
    if (limit && text.length > limit) {
      node.textContent = text.slice(0, limit - 1) + "\u2026";
      node.title = text;
    } else {
      node.textContent = text;
    }
  }
  function breakable(node, text) {
    // A break opportunity after each underscore, so long snake_case names wrap between words.
    text.split(/(?<=_)/).forEach(function (part, i) {
      if (i) node.appendChild(document.createElement("wbr"));
      node.appendChild(document.createTextNode(part));
    });
  }
  function build(r) {
    var tr = document.createElement("tr");
    tr.setAttribute("data-outcome", r.outcome);
    var name = td(tr, "name");
    if (r.href) {
      var a = document.createElement("a");
      a.href = r.href;
      breakable(a, r.name);
      name.appendChild(a);
    } else {
      breakable(name, r.name);
    }
    if (r.cats.length) {
      var cats = document.createElement("span");
      cats.className = "sub cats";
      breakable(cats, r.cats.join(", ").toLowerCase());
      name.appendChild(cats);
    }
    var o = td(tr, "");
    var badge = document.createElement("span");
    badge.className = "o o-" + r.outcome.replace(/[^a-z_]/g, "");
    badge.textContent = r.outcome;
    o.appendChild(badge);
    sub(o, r.crash, 120);
    td(tr, "num", fixed(r.score, 3));
    var sim = td(tr, "num", r.sim === null && r.simwhy ? "unknown" : fixed(r.sim, 3));
    sub(sim, r.simwhy, 90);
    if (r.ms !== null) sub(sim, "milestone " + fixed(r.ms, 2));
    if (r.mf !== null) sub(sim, "minefield " + fixed(r.mf, 2));
    if (r.rec !== undefined && r.rec !== null) sub(sim, "recorded " + fixed(r.rec, 3) + (r.repro === false ? ", not reproduced" : ""));
    var stop = td(tr, "stop");
    breakable(stop, r.stop);
    sub(stop, r.clock);
    sub(stop, r.cause, 90);
    clipped(td(tr, "fe"), r.fe, 120);
    td(tr, "num", r.steps);
    td(tr, "num", r.saved);
    td(tr, "num", r.calls);
    var cost = td(tr, "num cost", r.costunk ? "unknown" : fixed(r.cost, 4));
    if (r.jcost !== undefined && r.jcost !== null && r.jcost !== r.cost) sub(cost, "judges " + fixed(r.jcost, 4));
    td(tr, "num secs", fixed(r.secs, 1));
    return tr;
  }
  var trs = [];  // each row is built the first time it is shown
  var text = rows.map(function (r) {
    return [r.name, r.outcome, r.stop, r.cause, r.fe, r.crash, r.cats.join(" ")].join("\n").toLowerCase();
  });

  function distinct(key) {
    // A Map, not a plain object: a value named constructor, toString or __proto__ is a key like any other.
    var seen = new Map();
    rows.forEach(function (r) { (key === "cat" ? r.cats : [r[key]]).forEach(function (v) { if (v) seen.set(v, (seen.get(v) || 0) + 1); }); });
    return Array.from(seen.keys()).sort().map(function (v) { return [v, seen.get(v)]; });
  }
  ["outcome", "stop", "cat"].forEach(function (key) {
    distinct(key).forEach(function (pair) { filters[key].appendChild(new Option(pair[0] + " (" + pair[1] + ")", pair[0])); });
  });

  function compare(a, b) {
    var x = rows[a][state.sort], y = rows[b][state.sort];
    var nx = x === null || x === undefined || x === "", ny = y === null || y === undefined || y === "";
    if (nx || ny) return nx === ny ? a - b : (nx ? 1 : -1);  // empty cells last, whichever the direction
    var c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
    return c === 0 ? a - b : c * state.dir;
  }
  function render() {
    var q = state.q.toLowerCase();
    var shown = [];
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      if (state.outcome && r.outcome !== state.outcome) continue;
      if (state.stop && r.stop !== state.stop) continue;
      if (state.cat && r.cats.indexOf(state.cat) < 0) continue;
      if (q && text[i].indexOf(q) < 0) continue;
      shown.push(i);
    }
    if (state.sort) shown.sort(compare);
    var frag = document.createDocumentFragment();
    shown.slice(0, state.limit).forEach(function (i) { frag.appendChild(trs[i] || (trs[i] = build(rows[i]))); });
    body.replaceChildren(frag);
    count.textContent = String(shown.length);
    var left = shown.length - Math.min(shown.length, state.limit);
    more.hidden = left === 0;
    more.textContent = "show " + Math.min(left, PAGE) + " more of " + left + " not shown";
    heads.forEach(function (th) {
      var key = th.getAttribute("data-key");
      if (key === state.sort) th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
      else th.removeAttribute("aria-sort");
    });
  }
  function save() {
    var p = new URLSearchParams();
    if (state.sort) p.set("sort", (state.dir < 0 ? "-" : "") + state.sort);
    ["outcome", "stop", "cat", "q"].forEach(function (k) { if (state[k]) p.set(k, state[k]); });
    try { history.replaceState(null, "", "#" + p.toString()); } catch (e) { /* a file: URL may refuse; the page still works */ }
  }
  function load() {
    var p = new URLSearchParams(location.hash.slice(1));
    var sort = p.get("sort") || "";
    state.dir = sort.charAt(0) === "-" ? -1 : 1;
    state.sort = sort.replace(/^-/, "");
    if (!heads.some(function (th) { return th.getAttribute("data-key") === state.sort; })) state.sort = "";
    ["outcome", "stop", "cat", "q"].forEach(function (k) {
      state[k] = p.get(k) || "";
      filters[k].value = state[k];
      if (filters[k].value !== state[k]) state[k] = "";
    });
  }
  heads.forEach(function (th) {
    th.querySelector("button").addEventListener("click", function () {
      var key = th.getAttribute("data-key");
      state.dir = state.sort === key ? -state.dir : 1;
      state.sort = key;
      state.limit = PAGE;
      render();
      save();
    });
  });
  ["outcome", "stop", "cat", "q"].forEach(function (k) {
    filters[k].addEventListener(k === "q" ? "input" : "change", function () {
      state[k] = filters[k].value;
      state.limit = PAGE;
      render();
      save();
    });
  });
  more.addEventListener("click", function () {
    state.limit += PAGE;
    render();
  });
  load();
  render();
  document.body.setAttribute("data-ready", "1");
})();
