import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

/** The built CLI; `npm test` builds before running the tests. */
export const BIN = join(import.meta.dirname, "..", "..", "dist", "cli", "bin.js");

export function assertBuilt(): void {
	if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`npm run build\` first (npm test does)`);
}

export interface SpawnedCli {
	child: ChildProcess;
	/** Resolves with the exit code (or 128 + signal number when killed) and the output. */
	done: Promise<{ code: number; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/** Start the built CLI as a real process, as cron would. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv, cwd?: string): SpawnedCli {
	const child = spawn(process.execPath, [BIN, ...args], {
		// TMPDIR: the test run's own temporary folder (test/helpers/temp-root.ts).
		env: { PATH: process.env.PATH, TMPDIR: process.env.TMPDIR, ...env },
		cwd,
		stdio: ["ignore", "pipe", "pipe"],
	});
	let stdout = "";
	let stderr = "";
	child.stdout?.on("data", (chunk: Buffer) => {
		stdout += chunk.toString();
	});
	child.stderr?.on("data", (chunk: Buffer) => {
		stderr += chunk.toString();
	});
	const done = new Promise<{ code: number; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
		(resolve) => {
			child.on("close", (code, signal) => resolve({ code: code ?? -1, signal, stdout, stderr }));
		},
	);
	return { child, done };
}
