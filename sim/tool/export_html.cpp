// SPDX-License-Identifier: MIT
// `loopcanary export --format html`: one self-contained page (inline CSS and script, no network,
// no framework). The data sits in a <script type="application/json"> element, every string
// escaped so that "</script>" cannot end it; the page's script builds the blocks table (sortable,
// filterable; each block's wait objects and the main one's holder stack beside it), a flame graph
// per culprit, a timeline of blocks per loop and, when the logs hold
// health records, charts of load, rate and latency over time (inline SVG) from it.
// Bounds: kMaxHtmlBlocks, kMaxFlameGraphs, kMinFlameNodeShare, kMaxHtmlHealthPoints (export.hpp).
#include <algorithm>
#include <map>
#include <ostream>
#include <queue>
#include <string>

#include "export.hpp"
#include "health_series.hpp"

namespace loopcanary::tool::exporting {
namespace {

struct Row {
  std::uint64_t seq = 0;  // input order, to break ties
  std::uint64_t duration_us = 0;
  std::string id, qualifier, loop, event, cause, culprit;
  std::vector<std::string> flags;
  std::vector<Stage> stages;
  double share = 0;
  std::uint32_t reports = 0;
  std::uint64_t dispatch = 0;
  std::uint64_t samples = 0;
  Placement place;
  std::vector<std::pair<std::string, std::uint64_t>> waits;  // each wait object's wait_text() and samples
  std::uint64_t waits_other = 0;
  std::string holder;                     // the main object's holder (holder_text()), "" when none
  std::vector<std::string> holder_stack;  // its frames' labels, innermost first
};

struct RowLonger {  // the heap's top is the shortest kept row (the first to go)
  bool operator()(const Row& a, const Row& b) const {
    return a.duration_us != b.duration_us ? a.duration_us > b.duration_us : a.seq < b.seq;
  }
};

struct Node {
  std::string name;
  std::uint64_t count = 0;
  std::map<std::string, std::size_t> children;  // name → index in Flame::nodes
};

struct Flame {
  std::vector<Node> nodes;  // nodes[0]: the root ("all")
  std::uint64_t blocks = 0;
  std::uint64_t samples = 0;
};

const char* const kStyle = R"CSS(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:16px 24px;
color:#1d232a;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:14px;margin:16px 0 4px}.note{color:#57606a;font-size:12px;margin:2px 0}
table{border-collapse:collapse;font-size:13px;width:100%}
th,td{border-bottom:1px solid #e5e8eb;padding:3px 8px;text-align:left;white-space:nowrap}
th{cursor:pointer;background:#f3f5f7;position:sticky;top:0;user-select:none}
th.asc::after{content:" \25B2"}th.desc::after{content:" \25BC"}
td.num,th.num{text-align:right}
td.culprit{white-space:normal;max-width:420px;overflow-wrap:anywhere}
tr.hung td{background:#fff0f0}
#filter{width:320px;padding:4px 6px;margin:0 0 8px;font:inherit}
.fg{position:relative;border:1px solid #d0d7de;background:#fafbfc;overflow:hidden;margin:4px 0 0}
.fg-node{position:absolute;height:17px;box-sizing:border-box;border:1px solid #fff;font-size:11px;
line-height:15px;padding:0 3px;overflow:hidden;white-space:nowrap;text-overflow:ellipsis;cursor:pointer;color:#1d232a}
.fg-node:hover{border-color:#1d232a}
.fg-bar{font-size:12px;margin:2px 0}.fg-bar button{font:inherit;font-size:11px;margin-left:8px}
svg.tl{display:block;border:1px solid #d0d7de;background:#fafbfc;margin:4px 0 0}
.tl-label{font-size:12px;margin:10px 0 0}
svg.hc{display:block;border:1px solid #d0d7de;background:#fafbfc;margin:4px 0 0}
.hc-line{fill:none;stroke-width:1.5;vector-effect:non-scaling-stroke}.hc-axis{font-size:11px;fill:#57606a}
.hc-key{font-size:12px;margin:2px 0}.hc-key span{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px}
.st-bar{display:inline-flex;width:120px;height:11px;border:1px solid #d0d7de;background:#fff;vertical-align:middle;
margin-right:6px;overflow:hidden}.st-seg{height:100%}.st-text{font-size:11px;color:#57606a}
td.waits{white-space:normal;max-width:420px;overflow-wrap:anywhere;font-size:12px}.wait{display:block}
.wait-other{display:block;color:#57606a}.holder summary{cursor:pointer;color:#57606a}
.holder ol{margin:2px 0;padding-left:20px;font-family:ui-monospace,monospace;font-size:11px}
)CSS";

const char* const kScript = R"JS(
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('lc-data').textContent);
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function ms(us) { return (us / 1000).toFixed(3); }
  function when(b) {
    if (b.wall) return new Date(b.t / 1000).toISOString().replace('T', ' ').replace('Z', '');
    return (b.t / 1e6).toFixed(6) + ' s (ticks)';
  }
  var s = data.summary;
  document.getElementById('summary').textContent =
    s.records + ' records read from ' + s.files + ' files, ' + s.warnings + ' warnings; ' + s.blocks +
    ' blocks kept (' + s.filtered + ' filtered out, ' + s.ignored + ' ignored).';
  document.getElementById('limits').textContent =
    data.blocks.length < s.blocks
      ? 'Table and timeline: the ' + data.blocks.length + ' longest of ' + s.blocks + ' blocks (at most ' +
        data.limits.blocks + ').'
      : 'Table and timeline: all ' + s.blocks + ' blocks.';

  // Blocks table: sortable by a click on a header, filtered by the text box.
  var columns = [
    ['when', 'Start', false, function (b) { return b.t; }, when],
    ['qualifier', 'Qualifier', false, function (b) { return b.q; }],
    ['loop', 'Loop', false, function (b) { return b.loop; }],
    ['event', 'Event', false, function (b) { return b.ev; }],
    ['duration', 'Duration ms', true, function (b) { return b.d; }, function (b) { return ms(b.d); }],
    ['cause', 'Cause', false, function (b) { return b.cause; }],
    ['flags', 'Flags', false, function (b) { return b.flags.join(' '); }],
    ['culprit', 'Culprit', false, function (b) { return b.culprit; }],
    ['share', 'Share %', true, function (b) { return b.share; },
      function (b) { return b.culprit ? b.share.toFixed(1) : ''; }],
    ['stages', 'Stages', false, function (b) { return b.st.map(function (s) { return s[0]; }).join(' '); },
      null, stageSplit],
    ['waits', 'Waits', false, function (b) { return b.w.map(function (w) { return w[0]; }).join(' '); },
      null, waitList],
    ['samples', 'Samples', true, function (b) { return b.n; }],
    ['reports', 'Reports', true, function (b) { return b.reports; }],
    ['id', 'ID', false, function (b) { return b.id; }]
  ];
  // A block's stages: a bar of the block's duration, one segment per stage (its share), then
  // the stages' names and times; nothing when the block has none.
  function stageSplit(td, b) {
    if (b.st.length === 0) return;
    var bar = el('span', 'st-bar');
    var text = [];
    b.st.forEach(function (s) {
      var share = b.d > 0 ? Math.min(s[1] / b.d, 1) : 0;
      var seg = el('span', 'st-seg');
      seg.style.width = (share * 100) + '%';
      seg.style.background = 'hsl(' + (190 + hue(s[0]) % 120) + ',55%,' + (55 + hue(s[0]) % 20) + '%)';
      seg.title = s[0] + ' ' + ms(s[1]) + ' ms (' + (share * 100).toFixed(1) + ' %)';
      seg.setAttribute('data-stage', s[0]);
      seg.setAttribute('data-us', String(s[1]));
      bar.appendChild(seg);
      text.push(s[0] + ' ' + ms(s[1]));
    });
    td.appendChild(bar);
    td.appendChild(el('span', 'st-text', text.join(', ') + ' ms'));
  }
  // What a block's loop thread waited on: each object (its samples), then the main object's
  // holder and its stack, innermost first, folded.
  function waitList(td, b) {
    b.w.forEach(function (w) {
      var e = el('span', 'wait', w[0] + ' (' + w[1] + ')');
      e.setAttribute('data-samples', String(w[1]));
      td.appendChild(e);
    });
    if (b.wo > 0) td.appendChild(el('span', 'wait-other', 'other ' + b.wo));
    if (b.hs.length === 0) return;
    var holder = el('details', 'holder');
    holder.appendChild(el('summary', '', 'holder ' + b.h));
    var list = el('ol');
    b.hs.forEach(function (f) { list.appendChild(el('li', '', f)); });
    holder.appendChild(list);
    td.appendChild(holder);
  }
  var table = document.getElementById('blocks');
  var head = el('tr');
  var body = el('tbody');
  var rows = data.blocks.map(function (b) {
    var tr = el('tr', b.flags.indexOf('hung') >= 0 ? 'block-row hung' : 'block-row');
    columns.forEach(function (c) {
      if (c[5]) {
        var td = el('td', c[0]);
        c[5](td, b);
        tr.appendChild(td);
        return;
      }
      var v = c[4] ? c[4](b) : c[3](b);
      tr.appendChild(el('td', c[2] ? 'num' : (c[0] === 'culprit' ? 'culprit' : ''), String(v)));
    });
    return { tr: tr, b: b, text: tr.textContent.toLowerCase() };
  });
  var sortKey = -1, sortDir = 1;
  function render() {
    while (body.firstChild) body.removeChild(body.firstChild);
    rows.forEach(function (r) { body.appendChild(r.tr); });
  }
  function sortBy(i, dir) {
    var c = columns[i];
    sortKey = i;
    sortDir = dir;
    Array.prototype.forEach.call(head.children, function (h, k) {
      h.classList.remove('asc', 'desc');
      if (k === i) h.classList.add(dir > 0 ? 'asc' : 'desc');
    });
    rows.sort(function (x, y) {
      var a = c[3](x.b), b = c[3](y.b);
      return (a < b ? -1 : a > b ? 1 : 0) * dir;
    });
    render();
  }
  function filterBy(text) {
    var q = text.toLowerCase();
    var shown = 0;
    rows.forEach(function (r) {
      var hide = q !== '' && r.text.indexOf(q) < 0;
      r.tr.style.display = hide ? 'none' : '';
      if (!hide) shown++;
    });
    document.getElementById('shown').textContent = shown + ' of ' + rows.length + ' rows';
  }
  columns.forEach(function (c, i) {
    var th = el('th', c[2] ? 'num' : '', c[1]);
    th.setAttribute('data-key', c[0]);
    th.addEventListener('click', function () { sortBy(i, sortKey === i ? -sortDir : (c[2] ? -1 : 1)); });
    head.appendChild(th);
  });
  var thead = el('thead');
  thead.appendChild(head);
  table.appendChild(thead);
  table.appendChild(body);
  render();
  var filter = document.getElementById('filter');
  filter.addEventListener('input', function () { filterBy(filter.value); });
  // The address may preset both: #sort=KEY (-KEY: descending)&filter=TEXT.
  location.hash.replace(/^#/, '').split('&').forEach(function (part) {
    var eq = part.indexOf('=');
    if (eq < 0) return;
    var key = part.slice(0, eq), value = part.slice(eq + 1);
    try { value = decodeURIComponent(value); } catch (e) { /* left as written */ }
    if (key === 'filter') filter.value = value;
    if (key === 'sort') {
      columns.forEach(function (c, i) {
        if (c[0] === value.replace(/^-/, '')) sortBy(i, value[0] === '-' ? -1 : 1);
      });
    }
  });
  filterBy(filter.value);

  // Flame graphs: node = [name, samples, [children]]; root on top (an icicle), width = samples.
  function hue(name) {
    var h = 0;
    for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) % 360;
    return h;
  }
  function depthOf(n) {
    var d = 0;
    n[2].forEach(function (c) { d = Math.max(d, depthOf(c)); });
    return d + 1;
  }
  function drawFlame(box, bar, root, total) {
    while (box.firstChild) box.removeChild(box.firstChild);
    box.style.height = (depthOf(root) * 17 + 2) + 'px';
    function put(n, x, depth) {
      var w = n[1] / root[1];
      var d = el('div', 'fg-node', n[0]);
      d.style.left = (x * 100) + '%';
      d.style.width = (w * 100) + '%';
      d.style.top = (depth * 17) + 'px';
      d.style.background = 'hsl(' + (20 + hue(n[0]) % 40) + ',85%,' + (62 + hue(n[0]) % 20) + '%)';
      d.title = n[0] + '\n' + n[1] + ' samples (' + (100 * n[1] / total).toFixed(1) + ' %)';
      d.setAttribute('data-samples', String(n[1]));
      d.addEventListener('click', function () { zoom(n); });
      box.appendChild(d);
      var cx = x;
      n[2].forEach(function (c) { put(c, cx, depth + 1); cx += c[1] / root[1]; });
    }
    function zoom(n) {
      drawFlame(box, bar, n, total);
      bar.textContent = n === box.lcRoot ? '' : 'zoomed on ' + n[0] + ' ';
      if (n !== box.lcRoot) {
        var reset = el('button', '', 'reset zoom');
        reset.addEventListener('click', function () { zoom(box.lcRoot); });
        bar.appendChild(reset);
      }
    }
    put(root, 0, 0);
  }
  var flames = document.getElementById('flames');
  data.flames.forEach(function (f) {
    flames.appendChild(el('h3', '', f.culprit === '' ? '(no culprit)' : f.culprit));
    flames.appendChild(el('p', 'note', f.blocks + ' blocks, ' + f.samples + ' kept samples' +
      (f.pruned ? '; ' + f.pruned + ' samples in nodes under 0.1 % not drawn' : '') + '. Click a frame to zoom.'));
    var bar = el('div', 'fg-bar');
    var box = el('div', 'fg');
    box.setAttribute('data-culprit', f.culprit);
    box.lcRoot = f.tree;
    flames.appendChild(bar);
    flames.appendChild(box);
    drawFlame(box, bar, f.tree, f.tree[1]);
  });
  if (data.flames.length === 0) flames.appendChild(el('p', 'note', 'No kept samples.'));
  if (data.limits.more_culprits > 0)
    flames.appendChild(el('p', 'note', data.limits.more_culprits +
      ' more culprits with fewer samples are not drawn (at most ' + data.limits.flames + ').'));

  // Timeline: one row per loop, a bar per block, x = time over the loop's span.
  var NS = 'http://www.w3.org/2000/svg';
  var timeline = document.getElementById('timeline');
  var colours = { running: '#d9534f', waiting: '#5b8def', starved: '#e0a030', unknown: '#9aa3ab' };
  data.tracks.forEach(function (t) {
    var mine = data.blocks.filter(function (b) { return b.track === t.id; });
    if (mine.length === 0) return;
    var lo = Infinity, hi = -Infinity;
    mine.forEach(function (b) { lo = Math.min(lo, b.t); hi = Math.max(hi, b.t + b.d); });
    var span = Math.max(hi - lo, 1), width = 1000, height = 34;
    timeline.appendChild(el('p', 'tl-label', t.process + ' \u00b7 loop ' + t.loop + ': ' + mine.length +
      ' blocks over ' + (span / 1e6).toFixed(3) + ' s from ' + when({ t: lo, wall: mine[0].wall })));
    var svg = document.createElementNS(NS, 'svg');
    svg.setAttribute('class', 'tl');
    svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    svg.setAttribute('width', '100%');
    svg.setAttribute('height', String(height));
    svg.setAttribute('preserveAspectRatio', 'none');
    svg.setAttribute('data-loop', t.loop);
    mine.forEach(function (b) {
      var r = document.createElementNS(NS, 'rect');
      r.setAttribute('class', 'tl-block');
      r.setAttribute('x', String((b.t - lo) / span * width));
      r.setAttribute('y', '4');
      r.setAttribute('width', String(Math.max(b.d / span * width, 1.5)));
      r.setAttribute('height', String(height - 8));
      r.setAttribute('fill', colours[b.cause] || colours.unknown);
      if (b.flags.indexOf('hung') >= 0) { r.setAttribute('stroke', '#000'); r.setAttribute('stroke-width', '1'); }
      var tip = document.createElementNS(NS, 'title');
      tip.textContent =
        b.ev + ', ' + ms(b.d) + ' ms, ' + b.cause + (b.culprit ? ', ' + b.culprit : '') + ', ' + when(b);
      r.appendChild(tip);
      svg.appendChild(r);
    });
    timeline.appendChild(svg);
  });
  // Health over time: per loop, a chart each of load, rate and latency (p99 per event); a
  // polyline per series, x = the window's end over the loop's span, y = the value over its max.
  var health = document.getElementById('health');
  var palette = ['#d9534f', '#5b8def', '#e0a030', '#3aa675', '#9b59b6', '#17a2b8', '#8d6e63', '#e83e8c'];
  function chart(kind, title, unit, times, lines, loopName) {
    var width = 1000, height = 140, pad = 4;
    var max = 0;
    lines.forEach(function (l) { l.values.forEach(function (v) { if (v !== null) max = Math.max(max, v); }); });
    if (max <= 0) max = 1;
    var lo = times[0], hi = times[times.length - 1], span = Math.max(hi - lo, 1e-9);
    health.appendChild(el('p', 'tl-label', title + ' (max ' + max.toFixed(1) + ' ' + unit + ')'));
    var svg = document.createElementNS(NS, 'svg');
    svg.setAttribute('class', 'hc');
    svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    svg.setAttribute('width', '100%');
    svg.setAttribute('height', String(height));
    svg.setAttribute('preserveAspectRatio', 'none');
    svg.setAttribute('data-chart', kind);
    svg.setAttribute('data-loop', loopName);
    var key = el('p', 'hc-key');
    lines.forEach(function (l, i) {
      var pts = [];
      l.values.forEach(function (v, k) {
        if (v === null) return;
        var x = times.length === 1 ? width / 2 : (times[k] - lo) / span * width;
        var y = height - pad - v / max * (height - 2 * pad);
        pts.push(x.toFixed(2) + ',' + y.toFixed(2));
      });
      var line = document.createElementNS(NS, 'polyline');
      line.setAttribute('class', 'hc-line');
      line.setAttribute('points', pts.join(' '));
      line.setAttribute('stroke', palette[i % palette.length]);
      line.setAttribute('data-series', l.name);
      line.setAttribute('data-points', String(pts.length));
      var tip = document.createElementNS(NS, 'title');
      tip.textContent = l.name + ': ' + pts.length + ' points, max ' + max.toFixed(1) + ' ' + unit;
      line.appendChild(tip);
      svg.appendChild(line);
      var swatch = el('span');
      swatch.style.background = palette[i % palette.length];
      key.appendChild(swatch);
      key.appendChild(document.createTextNode(l.name));
    });
    health.appendChild(svg);
    health.appendChild(key);
  }
  data.health.forEach(function (h) {
    if (h.points.length === 0) return;
    var times = h.points.map(function (p) { return p[0]; });
    health.appendChild(el('h3', '', h.process + ' \u00b7 loop ' + h.loop + ': ' + h.points.length +
      ' health records over ' + (times[times.length - 1] - times[0]).toFixed(3) + ' s' +
      (h.dropped ? ' (the latest; ' + h.dropped + ' older not drawn)' : '')));
    chart('load', 'Load and idle, %', '%', times, [
      { name: 'load', values: h.points.map(function (p) { return p[1] / 10; }) },
      { name: 'idle', values: h.points.map(function (p) { return p[3] === null ? null : p[3] / 10; }) }
    ].filter(function (l) { return l.values.some(function (v) { return v !== null; }); }), h.loop);
    chart('rate', 'Dispatch rate, per second', '/s', times,
      [{ name: 'dispatches', values: h.points.map(function (p) { return p[2] / 1000; }) }], h.loop);
    chart('latency', 'Queue latency p99 per event, ms', 'ms', times, h.events.map(function (name, i) {
      return { name: name, values: h.points.map(function (p) { return p[4][i] === null ? null : p[4][i] / 1000; }) };
    }), h.loop);
  });
  if (data.health.length === 0) {
    document.getElementById('health-head').style.display = 'none';
    document.getElementById('health-note').style.display = 'none';
  }
  document.body.setAttribute('data-ready', 'true');
})();
)JS";

class HtmlWriter final : public Writer {
 public:
  explicit HtmlWriter(std::ostream& out) : out_(out) {}

  void add(const Block& block) override {
    const LogRecord& r = block.record;
    bool new_process = false;
    bool new_track = false;
    Row row;
    row.place = timeline_.place(block, new_process, new_track);
    row.seq = seq_++;
    row.duration_us = r.duration_us;
    row.id = block.id;
    row.qualifier = r.qualifier;
    row.loop = r.loop;
    row.event = r.event;
    row.cause = to_string(r.cause);
    row.culprit = block.culprit.label;
    row.flags = flag_names(r);
    row.stages = r.stages;
    row.share = static_cast<double>(block.culprit.share_permille()) / 10.0;
    row.reports = block.reports;
    row.dispatch = r.dispatch;
    const std::vector<CountedStack> stacks = record_stacks(r);
    row.samples = 0;
    for (const CountedStack& s : stacks) row.samples += s.samples;
    take_waits(r, row);
    rows_.push(std::move(row));
    if (rows_.size() > kMaxHtmlBlocks) rows_.pop();

    if (stacks.empty()) return;
    Flame& flame = flames_[block.culprit.label];
    if (flame.nodes.empty()) flame.nodes.push_back(Node{"all", 0, {}});
    ++flame.blocks;
    for (const CountedStack& s : stacks) {
      root_first_labels(s.stack, labels_);
      std::size_t at = 0;
      flame.nodes[0].count += s.samples;
      for (const std::string& label : labels_) {
        auto it = flame.nodes[at].children.find(label);
        if (it == flame.nodes[at].children.end()) {
          flame.nodes.push_back(Node{label, 0, {}});
          it = flame.nodes[at].children.emplace(label, flame.nodes.size() - 1).first;
        }
        at = it->second;
        flame.nodes[at].count += s.samples;
      }
      flame.samples += s.samples;
    }
  }

  void add_health(const HealthLog& record) override { health_.add(record); }

  void finish(const ReadStats& read, const BlockStats& blocks) override {
    out_ << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'; img-src data:\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<link rel=\"icon\" href=\"data:,\">\n<title>loopcanary report</title>\n<style>"
         << kStyle << "</style>\n</head>\n<body>\n<h1>loopcanary report</h1>\n"
         << "<p class=\"note\" id=\"summary\"></p>\n<p class=\"note\" id=\"limits\"></p>\n"
         << "<h2>Blocks</h2>\n<input id=\"filter\" type=\"search\" placeholder=\"filter rows (any text)\">\n"
         << "<span class=\"note\" id=\"shown\"></span>\n<table id=\"blocks\"></table>\n"
         << "<h2>Flame graphs by culprit</h2>\n<p class=\"note\">The kept samples of the blocks of each culprit, "
            "root frame on top, width proportional to samples.</p>\n<div id=\"flames\"></div>\n"
         << "<h2>Timeline by loop</h2>\n<p class=\"note\">One bar per block; colour: cause (red running, blue "
            "waiting, amber starved, grey unknown); black outline: hung.</p>\n<div id=\"timeline\"></div>\n"
         << "<h2 id=\"health-head\">Health over time</h2>\n<p class=\"note\" id=\"health-note\">Per loop, from its "
            "health records: load and idle share of each window, the dispatch rate, and each event's queue "
            "latency p99; x: the window's end.</p>\n<div id=\"health\"></div>\n"
         << "<script type=\"application/json\" id=\"lc-data\">";
    write_data(read, blocks);
    out_ << "</script>\n<script>" << kScript << "</script>\n</body>\n</html>\n";
  }

  std::string summary() const override {
    std::string text = std::to_string(seq_) + " blocks, " + std::to_string(std::min<std::size_t>(seq_, kMaxHtmlBlocks)) +
                       " in the table and timeline, " + std::to_string(std::min(flames_.size(), kMaxFlameGraphs)) +
                       " of " + std::to_string(flames_.size()) + " culprits with flame graphs";
    if (health_.records() > 0) {
      std::uint64_t drawn = 0;
      for (const HealthSeries& h : health_.series()) drawn += std::min(h.points.size(), kMaxHtmlHealthPoints);
      text += "; " + std::to_string(health_.records()) + " health records, " + std::to_string(drawn) + " charted for " +
              std::to_string(health_.series().size()) + (health_.series().size() == 1 ? " loop" : " loops");
    }
    return text;
  }

 private:
  void str(const std::string& text) { write_json_string(out_, text, true); }

  // The record's wait objects (their one description, wait_text()) and the main one's holder.
  static void take_waits(const LogRecord& r, Row& row) {
    for (const WaitEntry& o : r.wait.objects) row.waits.emplace_back(wait_text(o), o.samples);
    row.waits_other = r.wait.other;
    if (r.wait.objects.empty() || !r.wait.objects.front().owner) return;
    const WaitHolder& holder = *r.wait.objects.front().owner;
    row.holder = holder_text(holder);
    for (const Frame& f : holder.frames) row.holder_stack.push_back(f.label());
  }

  // A row's "w" (each object's [description, samples]), "wo", "h" and "hs" members.
  void write_waits(const Row& row) {
    out_ << ",\"w\":[";
    for (std::size_t k = 0; k < row.waits.size(); ++k) {
      out_ << (k ? ",[" : "[");
      str(row.waits[k].first);
      out_ << ',' << row.waits[k].second << ']';
    }
    out_ << "],\"wo\":" << row.waits_other << ",\"h\":";
    str(row.holder);
    out_ << ",\"hs\":[";
    for (std::size_t k = 0; k < row.holder_stack.size(); ++k) {
      out_ << (k ? "," : "");
      str(row.holder_stack[k]);
    }
    out_ << ']';
  }

  void write_tree(const Flame& flame, std::size_t at, std::uint64_t& pruned) {
    const Node& node = flame.nodes[at];
    out_ << '[';
    str(node.name);
    out_ << ',' << node.count << ",[";
    // Children by samples, most first, then by name (a stable drawing).
    std::vector<std::size_t> kids;
    for (const auto& [name, index] : node.children) kids.push_back(index);
    std::stable_sort(kids.begin(), kids.end(),
                     [&](std::size_t a, std::size_t b) { return flame.nodes[a].count > flame.nodes[b].count; });
    bool first = true;
    for (std::size_t kid : kids) {
      if (flame.nodes[kid].count * kMinFlameNodeShare < flame.nodes[0].count) {
        pruned += flame.nodes[kid].count;
        continue;
      }
      if (!first) out_ << ',';
      first = false;
      write_tree(flame, kid, pruned);
    }
    out_ << "]]";
  }

  void write_data(const ReadStats& read, const BlockStats& blocks) {
    out_ << "{\"summary\":{\"files\":" << read.files << ",\"records\":" << read.records
         << ",\"warnings\":" << read.warnings_total() << ",\"blocks\":" << blocks.kept
         << ",\"filtered\":" << blocks.filtered << ",\"ignored\":" << blocks.ignored << "},";
    std::vector<const std::pair<const std::string, Flame>*> order;
    for (const auto& entry : flames_) order.push_back(&entry);
    std::stable_sort(order.begin(), order.end(),
                     [](const auto* a, const auto* b) { return a->second.samples > b->second.samples; });
    const std::size_t drawn = std::min(order.size(), kMaxFlameGraphs);
    out_ << "\"limits\":{\"blocks\":" << kMaxHtmlBlocks << ",\"flames\":" << kMaxFlameGraphs
         << ",\"more_culprits\":" << (order.size() - drawn) << "},\"tracks\":[";
    for (std::size_t i = 0; i < timeline_.tracks(); ++i) {
      const auto& t = timeline_.track(static_cast<std::uint32_t>(i + 1));
      out_ << (i ? "," : "") << "{\"id\":" << (i + 1) << ",\"loop\":";
      str(t.loop);
      out_ << ",\"process\":";
      str(timeline_.process(t.process).name);
      out_ << '}';
    }
    out_ << "],\"blocks\":[";
    std::vector<Row> rows;
    rows.reserve(rows_.size());
    while (!rows_.empty()) {
      rows.push_back(rows_.top());
      rows_.pop();
    }
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.seq < b.seq; });
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& row = rows[i];
      out_ << (i ? ",\n" : "\n") << "{\"id\":";
      str(row.id);
      out_ << ",\"q\":";
      str(row.qualifier);
      out_ << ",\"loop\":";
      str(row.loop);
      out_ << ",\"ev\":";
      str(row.event);
      out_ << ",\"cause\":";
      str(row.cause);
      out_ << ",\"culprit\":";
      str(row.culprit);
      out_ << ",\"flags\":[";
      for (std::size_t f = 0; f < row.flags.size(); ++f) {
        out_ << (f ? "," : "");
        str(row.flags[f]);
      }
      out_ << "],\"st\":[";
      for (std::size_t k = 0; k < row.stages.size(); ++k) {
        out_ << (k ? ",[" : "[");
        str(row.stages[k].name);
        out_ << ',' << row.stages[k].us << ']';
      }
      out_ << ']';
      write_waits(row);
      out_ << ",\"share\":" << format_us(row.share) << ",\"reports\":" << row.reports
           << ",\"dispatch\":" << row.dispatch << ",\"n\":" << row.samples << ",\"track\":" << row.place.track
           << ",\"t\":" << format_us(row.place.start_us) << ",\"d\":" << format_us(row.place.duration_us)
           << ",\"wall\":" << (row.place.wall_clock ? "true" : "false") << '}';
    }
    out_ << "],\"flames\":[";
    for (std::size_t i = 0; i < drawn; ++i) {
      const Flame& flame = order[i]->second;
      std::uint64_t pruned = 0;
      out_ << (i ? ",\n" : "\n") << "{\"culprit\":";
      str(order[i]->first);
      out_ << ",\"blocks\":" << flame.blocks << ",\"samples\":" << flame.samples << ",\"tree\":";
      write_tree(flame, 0, pruned);
      out_ << ",\"pruned\":" << pruned << '}';
    }
    out_ << "],\"health\":[";
    write_health();
    out_ << "]}";
  }

  // Per series: {"loop","process","events":[names],"dropped":N,"points":[[time_s, load ‰,
  // rate mHz, idle ‰ or null, [p99 µs per event or null]], ...]}, the latest kMaxHtmlHealthPoints.
  void write_health() {
    bool first = true;
    for (const HealthSeries& h : health_.series()) {
      const std::size_t skip = h.points.size() > kMaxHtmlHealthPoints ? h.points.size() - kMaxHtmlHealthPoints : 0;
      out_ << (first ? "\n{\"loop\":" : ",\n{\"loop\":");
      first = false;
      str(h.loop);
      out_ << ",\"process\":";
      str((h.qualifier.empty() ? std::string("(no qualifier)") : h.qualifier) + " \u00b7 " +
          h.source.substr(h.source.find_last_of('/') + 1));
      out_ << ",\"events\":[";
      for (std::size_t i = 0; i < h.events.size(); ++i) {
        out_ << (i ? "," : "");
        str(h.events[i]);
      }
      out_ << "],\"dropped\":" << (h.dropped + skip) << ",\"points\":[";
      std::vector<const HealthEventPoint*> by_event(h.events.size());
      for (std::size_t i = skip; i < h.points.size(); ++i) {
        const HealthPoint& p = h.points[i];
        out_ << (i == skip ? "[" : ",[") << format_us(p.time_s) << ',' << p.load_permille << ',' << p.rate_mhz << ','
             << (p.idle_permille ? std::to_string(*p.idle_permille) : std::string("null")) << ",[";
        std::fill(by_event.begin(), by_event.end(), nullptr);
        for (const HealthEventPoint& e : p.events) by_event[e.event] = &e;
        for (std::size_t k = 0; k < by_event.size(); ++k) {
          out_ << (k ? "," : "") << (by_event[k] != nullptr ? std::to_string(by_event[k]->p99_us) : std::string("null"));
        }
        out_ << "]]";
      }
      out_ << "]}";
    }
  }

  std::ostream& out_;
  HealthCollector health_;
  Timeline timeline_;
  std::uint64_t seq_ = 0;
  std::priority_queue<Row, std::vector<Row>, RowLonger> rows_;
  std::map<std::string, Flame> flames_;
  std::vector<std::string> labels_;
};

}  // namespace

std::unique_ptr<Writer> make_html_writer(std::ostream& out) { return std::make_unique<HtmlWriter>(out); }

}  // namespace loopcanary::tool::exporting
