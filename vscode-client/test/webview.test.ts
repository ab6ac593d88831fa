import assert from "node:assert/strict";
import { test } from "node:test";
import { csp, rooflineHtml, stripActive } from "../src/rooflineHtml";
import { serverSettings } from "../src/serverSettings";

test("the roofline page allows only its own nonce'd style and data: images", () => {
  const html = rooflineHtml({ state: "svg", file: "a.cu", svg: "<svg><text>x</text></svg>", kind: "modeled" }, "N0nce");
  assert.match(html, /content="default-src 'none'; style-src 'nonce-N0nce'; img-src data:/);
  assert.ok(!csp("x").includes("unsafe"));
  assert.match(html, /<style nonce="N0nce">/);
  assert.match(html, /<svg><text>x<\/text><\/svg>/);
});

test("scripts and event handlers never reach the page", () => {
  const svg = stripActive('<svg onload="alert(1)"><script>alert(2)</script><circle onclick=\'x()\' r="1"/></svg>');
  assert.ok(!/script|onload|onclick|alert/.test(svg), svg);
});

test("file names and messages are escaped", () => {
  const html = rooflineHtml({ state: "message", file: "<b>.cu", message: "a & b" }, "n");
  assert.match(html, /&lt;b&gt;\.cu/);
  assert.match(html, /a &amp; b/);
});

test("the extension's own settings are not sent to the server", () => {
  assert.deepEqual(serverSettings({ server: { path: "/x" }, trace: { server: "off" }, heat: { style: "gutter" },
    analysis: { arch: "sm_80" } }),
    { analysis: { arch: "sm_80" } });
  assert.equal(serverSettings(null), null);
});
