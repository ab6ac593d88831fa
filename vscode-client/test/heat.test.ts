import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { backgroundColor, byLevel, gutterSvg, LEVEL_FLOORS, levelOf, rulerColor } from "../src/heatLevels";

test("a line's level grows with its share; below 1 % it is not shaded", () => {
  assert.equal(levelOf(0.005), -1);
  assert.equal(levelOf(0.01), 0);
  assert.equal(levelOf(0.06), 1);
  assert.equal(levelOf(0.34), 3);
  assert.equal(levelOf(0.99), LEVEL_FLOORS.length - 1);
  const lines = [0.002, 0.02, 0.6, 0.55].map((share, line) => ({ line, share, reason: null, kernel: "k" }));
  assert.deepEqual(byLevel(lines).map((ls) => ls.map((l) => l.line)), [[1], [], [], [], [2, 3]]);
});

test("tints are translucent and deepen with the level; only hot levels mark the scroll bar", () => {
  const alpha = (c: string) => Number(/rgba\(\d+, \d+, \d+, ([\d.]+)\)/.exec(c)![1]);
  const alphas = LEVEL_FLOORS.map((_, i) => alpha(backgroundColor(i)));
  assert.deepEqual([...alphas].sort((a, b) => a - b), alphas);
  assert.ok(alphas.every((a) => a > 0 && a <= 0.4));
  assert.equal(rulerColor(0), undefined);
  assert.ok(rulerColor(LEVEL_FLOORS.length - 1));
});

test("the packaged gutter icons are the ones the code draws", () => {
  // out/test/heat.test.js -> vscode-client/media
  const media = path.resolve(__dirname, "..", "..", "media");
  LEVEL_FLOORS.forEach((_, level) => {
    assert.equal(readFileSync(path.join(media, `heat-${level}.svg`), "utf8"), gutterSvg(level),
      `media/heat-${level}.svg is stale: node scripts/heat_icons.js writes it`);
  });
});
