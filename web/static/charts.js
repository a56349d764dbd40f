// The overview's charts of the last hour (uPlot), from /console/fragments/charts, redrawn every
// 30 seconds. Each .chart names the series it draws in data-series.
(function () {
  "use strict";
  var COLORS = { running: "#2f6fed", warm: "#12a150", cold: "#dc6803", p50: "#2f6fed", p99: "#d92d20" };
  var plots = [];
  function draw(data) {
    var boxes = document.querySelectorAll("#charts .chart");
    plots.forEach(function (p) { p.destroy(); });
    plots = [];
    boxes.forEach(function (box) {
      var names = box.dataset.series.split(",");
      var series = [{}].concat(names.map(function (n) {
        return { label: n, stroke: COLORS[n] || "#667085", width: 2, spanGaps: false };
      }));
      var width = Math.max(240, box.clientWidth);
      var opts = { width: width, height: 180, series: series, legend: { show: true },
                   axes: [{}, { size: 50 }] };
      plots.push(new window.uPlot(opts, [data.t].concat(names.map(function (n) { return data[n]; })), box));
    });
    document.getElementById("charts").dataset.drawn = String(Date.now());
  }
  function load() {
    var root = document.getElementById("charts");
    if (!root || !window.uPlot) return;
    fetch(root.dataset.source, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(draw)
      .catch(function () { root.dataset.error = "1"; });
  }
  function start() { load(); setInterval(load, 30000); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
