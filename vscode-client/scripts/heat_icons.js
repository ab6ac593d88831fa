// Writes media/heat-<level>.svg from src/heatLevels.ts (the unit tests check they agree):
//   npx esbuild src/heatLevels.ts --format=cjs --outfile=out/heatLevels.js && node scripts/heat_icons.js
const fs = require("node:fs");
const path = require("node:path");
const { gutterSvg, LEVEL_FLOORS } = require("../out/heatLevels.js");

const media = path.join(__dirname, "..", "media");
fs.mkdirSync(media, { recursive: true });
LEVEL_FLOORS.forEach((_, level) => fs.writeFileSync(path.join(media, `heat-${level}.svg`), gutterSvg(level)));
