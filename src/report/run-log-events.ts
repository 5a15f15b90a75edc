import { jsonlLines } from "../common/index.js";
import type { PauseWindow } from "./report-data.js";

/** At most this many pause windows are kept (the longest, if a run had more). */
const MAX_PAUSES = 2000;

/**
 * The windows in which the service held every send back, read from `run.log`: each pause line names
 * its reason and length. Lines are pre-filtered by a substring so a long log is scanned, not parsed.
 */
export async function readPauseWindows(logPath: string): Promise<PauseWindow[]> {
	const windows: PauseWindow[] = [];
	try {
		for (const { text } of jsonlLines(logPath)) {
			if (!text.includes("pause")) continue;
			const window = pauseWindow(text);
			if (window) windows.push(window);
		}
	} catch {
		// No log (an old or hand-made folder): a report without pause marks, not no report.
		return [];
	}
	return boundWindows(windows);
}

/** One run.log line as a pause window, or null when it is not a pause line (or not well-formed). */
export function pauseWindow(line: string): PauseWindow | null {
	let entry: unknown;
	try {
		entry = JSON.parse(line);
	} catch {
		return null;
	}
	if (typeof entry !== "object" || entry === null) return null;
	const fields = entry as Record<string, unknown>;
	if (fields.event !== "pause") return null;
	const start = typeof fields.time === "string" ? Date.parse(fields.time) : Number.NaN;
	const length = fields.pause_ms;
	if (!Number.isFinite(start) || typeof length !== "number" || !Number.isFinite(length) || length < 0) return null;
	return {
		start_ms: start,
		end_ms: start + length,
		reason: typeof fields.reason === "string" ? fields.reason : "paused",
	};
}

function boundWindows(windows: PauseWindow[]): PauseWindow[] {
	if (windows.length <= MAX_PAUSES) return windows;
	return windows
		.sort((a, b) => b.end_ms - b.start_ms - (a.end_ms - a.start_ms))
		.slice(0, MAX_PAUSES)
		.sort((a, b) => a.start_ms - b.start_ms);
}
