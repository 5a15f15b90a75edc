import { Writable } from "node:stream";
import type { CliContext } from "../../src/cli/context.js";
import { main } from "../../src/cli/main.js";

/** A writable that keeps what was written, for asserting a command's output. */
export class CapturedStream extends Writable {
	text = "";
	isTTY = false;
	columns = 100;
	override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
		this.text += chunk.toString();
		callback();
	}
}

export interface CliRun {
	code: number;
	stdout: string;
	stderr: string;
}

/** Run the CLI in-process, as `main` runs it, with captured streams and an explicit environment. */
export async function runCli(
	argv: string[],
	options: { env?: NodeJS.ProcessEnv; cwd?: string; signal?: AbortSignal; tty?: boolean } = {},
): Promise<CliRun> {
	const stdout = new CapturedStream();
	const stderr = new CapturedStream();
	if (options.tty) stderr.isTTY = true;
	const ctx: CliContext = {
		stdout,
		stderr,
		env: options.env ?? {},
		cwd: options.cwd ?? process.cwd(),
		exitCode: 0,
		signal: options.signal ?? new AbortController().signal,
	};
	const code = await main(argv, ctx);
	return { code, stdout: stdout.text, stderr: stderr.text };
}
