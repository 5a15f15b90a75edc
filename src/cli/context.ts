import type { Writable } from "node:stream";
import type { LastWords } from "../common/index.js";

/**
 * Everything a command touches outside its arguments. `main` builds it from the process; tests
 * build it with captured streams, so commands run in-process without patching globals.
 */
export interface CliContext {
	readonly stdout: Writable & { isTTY?: boolean; columns?: number };
	readonly stderr: Writable & { isTTY?: boolean; columns?: number };
	readonly env: NodeJS.ProcessEnv;
	readonly cwd: string;
	/** Set by a command that finished but whose outcome is not plain success (e.g. 1: some targets failed). */
	exitCode: number;
	/** Aborted on SIGINT/SIGTERM; long-running commands stop starting work when it fires. */
	readonly signal: AbortSignal;
	/** What must still happen if a second signal ends the process at once (bin.ts says them); absent in tests that do not need it. */
	readonly lastWords?: LastWords;
}

/** True unless `NO_COLOR` is set (https://no-color.org) or the stream is not a terminal. */
export function useColor(ctx: CliContext, stream: CliContext["stdout"]): boolean {
	const noColor = ctx.env.NO_COLOR;
	if (noColor !== undefined && noColor !== "") return false;
	return stream.isTTY === true;
}

export function writeLine(stream: Writable, line = ""): void {
	stream.write(`${line}\n`);
}

export function writeJson(stream: Writable, value: unknown): void {
	stream.write(`${JSON.stringify(value, null, 2)}\n`);
}
