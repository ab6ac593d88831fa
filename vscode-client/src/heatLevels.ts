// The heat decoration's levels, colours and icons, kept free of `vscode` imports so they can be
// unit tested. A line's level comes from its share of its kernel's samples (the inlay hint's
// figure), on a log-like scale: a 60 % line and a 6 % line must look different, and so must 6 %
// and 1 %.

/** `kernelscope.heat.style`: nothing, a bar in the gutter, or a tint over the whole line. */
export type HeatStyle = "off" | "gutter" | "background";

export const HEAT_STYLES: readonly HeatStyle[] = ["off", "gutter", "background"];

/** One line of the server's `kernelscope.lineHeat` reply. */
export interface HeatLine {
  line: number; // 0-based, where the line is in the buffer now
  share: number; // 0..1 of its kernel's samples
  reason: string | null;
  kernel: string;
}

/** Lower bounds of the levels, as shares; a line below the first is left alone. */
export const LEVEL_FLOORS: readonly number[] = [0.01, 0.05, 0.15, 0.3, 0.5];

/** Level colours, cool to hot (the HTML report's bar colour is the hottest but one). */
export const LEVEL_COLORS: readonly string[] = ["#f4d35e", "#f6ae2d", "#f26419", "#e76f51", "#c1121f"];

/** Background alpha per level: a tint that leaves the text readable in light and dark themes. */
const BACKGROUND_ALPHA: readonly number[] = [0.1, 0.16, 0.24, 0.32, 0.4];

/** 0-based level of a share, or -1 below the first floor. */
export function levelOf(share: number): number {
  let level = -1;
  LEVEL_FLOORS.forEach((floor, i) => {
    if (share >= floor) {
      level = i;
    }
  });
  return level;
}

/** Lines grouped by level (index = level); lines below the first floor are dropped. */
export function byLevel(lines: readonly HeatLine[]): HeatLine[][] {
  const out: HeatLine[][] = LEVEL_FLOORS.map(() => []);
  for (const l of lines) {
    const level = levelOf(l.share);
    if (level >= 0) {
      out[level].push(l);
    }
  }
  return out;
}

export function backgroundColor(level: number): string {
  const hex = LEVEL_COLORS[level];
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return `rgba(${r}, ${g}, ${b}, ${BACKGROUND_ALPHA[level]})`;
}

/** The gutter icon of a level: a bar whose width grows with the level, so it reads without colour too. */
export function gutterSvg(level: number): string {
  const w = 3 + 2 * level;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">` +
    `<rect x="${16 - w}" y="0" width="${w}" height="16" fill="${LEVEL_COLORS[level]}"/></svg>\n`;
}

/** The overview ruler (scroll bar) marks only the hotter levels: a mark per warm line is noise. */
export function rulerColor(level: number): string | undefined {
  return level >= 2 ? LEVEL_COLORS[level] : undefined;
}
