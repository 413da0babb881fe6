(function () {
  "use strict";
  // Every value comes from two runs' records, which agents, users and tools wrote: it is only ever set as textContent or
  // an attribute value, never parsed as markup.
  var data = JSON.parse(document.getElementById("diff-data").textContent);
  var rows = data.rows;
  var body = document.getElementById("rows");
  var count = document.getElementById("count");
  var heads = Array.prototype.slice.call(document.querySelectorAll("#diff th[data-key]"));
  var filters = {change: document.getElementById("f-change"), outcome: document.getElementById("f-outcome"),
                 stop: document.getElementById("f-stop"), q: document.getElementById("f-q")};
  var more = document.getElementById("more");
  var PAGE = 100;  // rows drawn at a time, as on the run page
  var CHANGES = ["worse", "unscored", "same", "better"];
  var state = {sort: "", dir: 1, change: "", outcome: "", stop: "", q: "", limit: PAGE};

  function fixed(v, n) { return v === null || v === undefined ? "" : Number(v).toFixed(n); }
  function signed(v) { return v === null || v === undefined ? "" : (v > 0 ? "+" : v < 0 ? "\u2212" : "\u00b1") + Math.abs(v).toFixed(3); }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null && text !== "") node.textContent = String(text);
    return node;
  }
  function td(tr, cls, text) { var cell = el("td", cls, text); tr.appendChild(cell); return cell; }
  function clipped(node, text, limit) {
    // Long free text is cut on the page and whole in the tooltip (and in diff.json).
    text = String(text);
    if (limit && text.length > limit) {
      node.textContent = text.slice(0, limit - 1) + "\u2026";
      node.title = text;
    } else {
      node.textContent = text;
    }
    return node;
  }
  function breakable(node, text) {
    // A break opportunity after each underscore, so long snake_case names wrap between words.
    String(text).split(/(?<=_)/).forEach(function (part, i) {
      if (i) node.appendChild(document.createElement("wbr"));
      node.appendChild(document.createTextNode(part));
    });
    return node;
  }
  function badge(outcome) {
    var b = el("span", "o o-" + String(outcome).replace(/[^a-z_]/g, ""), outcome);
    return b;
  }
  function link(label, href) {
    var a = el("a", "", label);
    a.href = href;
    return a;
  }
  function sideLine(cell, label, text, limit) {
    if (!text) return;
    var line = el("span", "side");
    line.appendChild(el("span", "lbl", label + " "));
    line.appendChild(clipped(el("span"), text, limit));
    cell.appendChild(line);
  }
  function stopText(s) { return s.stop ? s.stop + (s.clock ? " (" + s.clock + ")" : "") + (s.cause ? ": " + s.cause : "") : ""; }

  function build(r) {
    var tr = el("tr");
    tr.setAttribute("data-change", r.change);
    var name = td(tr, "name");
    breakable(name, r.name);
    if (r.categories.length) breakable(name.appendChild(el("span", "sub cats")), r.categories.join(", ").toLowerCase());
    if (r.before.href || r.after.href) {
      var pages = name.appendChild(el("span", "sub pages"));
      if (r.before.href) pages.appendChild(link("before", r.before.href)).className = "before";
      if (r.after.href) pages.appendChild(link("after", r.after.href)).className = "after";
    }
    td(tr, "").appendChild(el("span", "c c-" + r.change.replace(/[^a-z]/g, ""), r.change));
    td(tr, "num", fixed(r.before.score, 3));
    td(tr, "num", fixed(r.after.score, 3));
    td(tr, "num delta" + (r.change === "worse" ? " neg" : r.change === "better" ? " pos" : ""), signed(r.delta));
    var o = td(tr, "");
    o.appendChild(badge(r.before.outcome));
    if (r.before.outcome !== r.after.outcome) {
      o.appendChild(el("span", "arrow", "\u2192"));
      o.appendChild(badge(r.after.outcome));
    }
    sideLine(o, "before", r.before.crash, 100);
    sideLine(o, "after", r.after.crash, 100);
    var sim = td(tr, "num", fixed(r.before.similarity, 3));
    if (r.before.similarity !== r.after.similarity) {
      sim.appendChild(el("span", "arrow", "\u2192"));
      sim.appendChild(document.createTextNode(fixed(r.after.similarity, 3) || "-"));
    }
    var stop = td(tr, "stop");
    sideLine(stop, "before", stopText(r.before), 110);
    sideLine(stop, "after", stopText(r.after), 110);
    var fe = td(tr, "fe");
    sideLine(fe, "before", r.before.first_error, 110);
    sideLine(fe, "after", r.after.first_error, 110);
    return tr;
  }

  function value(r, key) {
    switch (key) {
      case "name": return r.name;
      case "change": return CHANGES.indexOf(r.change);
      case "sa": return r.before.score;
      case "sb": return r.after.score;
      case "delta": return r.delta;
      case "outcome": return r.before.outcome + " " + r.after.outcome;
      case "sim": return r.after.similarity;
      case "stop": return r.after.stop || r.before.stop;
      case "fe": return r.after.first_error || r.before.first_error;
    }
    return null;
  }
  var trs = [];  // each row is built the first time it is shown
  var text = rows.map(function (r) {
    return [r.name, r.change, r.categories.join(" "), stopText(r.before), stopText(r.after), r.before.first_error, r.after.first_error,
            r.before.crash, r.after.crash, r.before.outcome, r.after.outcome].join("\n").toLowerCase();
  });

  function options(select, values) {
    // A Map, not a plain object: a value named constructor, toString or __proto__ is a key like any other.
    var seen = new Map();
    values.forEach(function (v) { if (v) seen.set(v, (seen.get(v) || 0) + 1); });
    Array.from(seen.keys()).sort().forEach(function (v) { select.appendChild(new Option(v + " (" + seen.get(v) + ")", v)); });
  }
  options(filters.change, rows.map(function (r) { return r.change; }));
  options(filters.outcome, rows.map(function (r) { return r.after.outcome; }));
  var stops = [];
  rows.forEach(function (r) {
    if (r.before.stop) stops.push(r.before.stop);
    if (r.after.stop && r.after.stop !== r.before.stop) stops.push(r.after.stop);
  });
  options(filters.stop, stops);

  function compare(a, b) {
    var x = value(rows[a], state.sort), y = value(rows[b], state.sort);
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
      if (state.change && r.change !== state.change) continue;
      if (state.outcome && r.after.outcome !== state.outcome) continue;
      if (state.stop && r.before.stop !== state.stop && r.after.stop !== state.stop) continue;
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
    ["change", "outcome", "stop", "q"].forEach(function (k) { if (state[k]) p.set(k, state[k]); });
    try { history.replaceState(null, "", "#" + p.toString()); } catch (e) { /* a file: URL may refuse; the page still works */ }
  }
  function load() {
    var p = new URLSearchParams(location.hash.slice(1));
    var sort = p.get("sort") || "";
    state.dir = sort.charAt(0) === "-" ? -1 : 1;
    state.sort = sort.replace(/^-/, "");
    if (!heads.some(function (th) { return th.getAttribute("data-key") === state.sort; })) state.sort = "";
    ["change", "outcome", "stop", "q"].forEach(function (k) {
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
  ["change", "outcome", "stop", "q"].forEach(function (k) {
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

  function alone(id, list) {
    // The scenarios one side alone holds, by name; a long list is drawn a hundred at a time too.
    var tbody = document.querySelector("#" + id + " tbody");
    var drawn = 0;
    var button = el("button", "", "");
    button.type = "button";
    function draw() {
      var frag = document.createDocumentFragment();
      list.slice(drawn, drawn + PAGE).forEach(function (r) {
        var tr = el("tr");
        var name = td(tr, "name");
        if (r.href) breakable(name.appendChild(link("", r.href)), r.name);
        else breakable(name, r.name);
        td(tr, "").appendChild(badge(r.outcome));
        td(tr, "num", fixed(r.score, 3));
        clipped(td(tr, "stop"), stopText(r), 110);
        clipped(td(tr, "fe"), r.first_error, 110);
        frag.appendChild(tr);
      });
      tbody.appendChild(frag);
      drawn = Math.min(list.length, drawn + PAGE);
      button.hidden = drawn >= list.length;
      button.textContent = "show " + Math.min(list.length - drawn, PAGE) + " more of " + (list.length - drawn) + " not shown";
    }
    document.getElementById(id).parentNode.appendChild(button);
    button.addEventListener("click", draw);
    draw();
  }
  alone("only-a", data.only_in_a);
  alone("only-b", data.only_in_b);
  var skipped = document.querySelector("#skipped tbody");
  if (skipped) {
    data.skipped_entries.forEach(function (s) {
      var tr = el("tr");
      td(tr, "", s.side === "a" ? "before" : "after");
      td(tr, "num", s.entry);
      clipped(td(tr, "name"), s.name || "", 120);
      clipped(td(tr, "fe"), s.reason, 300);
      skipped.appendChild(tr);
    });
  }
  load();
  render();
  document.body.setAttribute("data-ready", "1");
})();
