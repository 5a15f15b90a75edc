import { stripVTControlCharacters } from "node:util";

/**
 * ANSI styling that can be switched off as a whole. Commands build one from `useColor(ctx, stream)`,
 * so NO_COLOR and non-TTY output never carry escape codes and no call site has to check.
 */
export interface Style {
	readonly enabled: boolean;
	bold(text: string): string;
	dim(text: string): string;
	green(text: string): string;
	red(text: string): string;
	yellow(text: string): string;
	cyan(text: string): string;
}

function wrap(enabled: boolean, open: number, close: number): (text: string) => string {
	return enabled ? (text) => `\u001b[${open}m${text}\u001b[${close}m` : (text) => text;
}

export function createStyle(enabled: boolean): Style {
	return {
		enabled,
		bold: wrap(enabled, 1, 22),
		dim: wrap(enabled, 2, 22),
		green: wrap(enabled, 32, 39),
		red: wrap(enabled, 31, 39),
		yellow: wrap(enabled, 33, 39),
		cyan: wrap(enabled, 36, 39),
	};
}

/** Columns a text takes in a terminal: escape codes take none; one per code point otherwise (no wide glyphs here). */
export function displayWidth(text: string): number {
	return [...stripVTControlCharacters(text)].length;
}
