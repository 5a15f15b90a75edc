import type { CliContext } from "../context.js";

/** Width used when the stream is not a terminal (a pipe, a file, a test): the classic 80 columns. */
export const DEFAULT_COLUMNS = 80;

export function terminalColumns(stream: CliContext["stdout"]): number {
	const columns = stream.columns;
	return typeof columns === "number" && Number.isFinite(columns) && columns > 0 ? columns : DEFAULT_COLUMNS;
}
