import { Writable } from "node:stream";
import type { CliContext } from "../../src/cli/context.js";
import { main } from "../../src/cli/main.js";

/** A stream that keeps what is written, with the TTY traits a test wants to pretend. */
function captureStream(traits: { isTTY?: boolean; columns?: number }) {
	const chunks: string[] = [];
	const stream = new Writable({
		write(chunk: Buffer | string, _encoding, callback) {
			chunks.push(typeof chunk === "string" ? chunk : chunk.toString("utf8"));
			callback();
		},
	}) as Writable & { isTTY?: boolean; columns?: number };
	if (traits.isTTY !== undefined) stream.isTTY = traits.isTTY;
	if (traits.columns !== undefined) stream.columns = traits.columns;
	return { stream, text: () => chunks.join("") };
}

export interface CliRun {
	readonly code: number;
	readonly stdout: string;
	readonly stderr: string;
}

export interface RunOptions {
	readonly env?: NodeJS.ProcessEnv;
	readonly cwd?: string;
	readonly isTTY?: boolean;
	readonly columns?: number;
}

/** Run the CLI in-process, the way `bin.ts` does, with captured streams and a given environment. */
export async function runCli(argv: readonly string[], options: RunOptions = {}): Promise<CliRun> {
	const traits = {
		...(options.isTTY !== undefined ? { isTTY: options.isTTY } : {}),
		...(options.columns !== undefined ? { columns: options.columns } : {}),
	};
	const stdout = captureStream(traits);
	const stderr = captureStream(traits);
	const ctx: CliContext = {
		stdout: stdout.stream,
		stderr: stderr.stream,
		env: options.env ?? {},
		cwd: options.cwd ?? process.cwd(),
		exitCode: 0,
		signal: new AbortController().signal,
	};
	const code = await main(argv, ctx);
	return { code, stdout: stdout.text(), stderr: stderr.text() };
}

/** The start of any colour or style escape code (ESC "["). */
export const ANSI_PATTERN = new RegExp(`${String.fromCharCode(27)}\\[`);
