import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Writable } from "node:stream";
import { onTestFinished } from "vitest";
import type { CliContext } from "../../src/cli/context.js";
import {
	formatProblem,
	JobValidationError,
	type LoadedJob,
	type LoadJobOptions,
	loadJob,
} from "../../src/job/index.js";

/** A fresh directory under the OS temp dir, removed after the test. */
export async function makeTempDir(): Promise<string> {
	const dir = await mkdtemp(join(tmpdir(), "scrapejob-job-"));
	onTestFinished(() => rm(dir, { recursive: true, force: true }));
	return dir;
}

/** Write files (paths relative to `dir`, parents created). */
export async function writeFiles(dir: string, files: Record<string, string | Buffer>): Promise<void> {
	for (const [name, content] of Object.entries(files)) {
		const path = join(dir, name);
		await mkdir(dirname(path), { recursive: true });
		await writeFile(path, content);
	}
}

export interface Outcome {
	/** Formatted errors, `job.yaml:line:col message`. */
	errors: string[];
	/** Formatted warnings. */
	warnings: string[];
	loaded: LoadedJob | null;
}

/**
 * Write `job.yaml` (and any other files) to a temp dir and load it with that dir as the working
 * directory, so problems read `job.yaml:3:5 …`. Returns what was found instead of throwing.
 */
export async function loadYaml(
	yaml: string | Buffer,
	options: { files?: Record<string, string | Buffer>; env?: NodeJS.ProcessEnv } & Omit<LoadJobOptions, "cwd"> = {},
): Promise<Outcome> {
	const dir = await makeTempDir();
	const { files, ...loadOptions } = options;
	await writeFiles(dir, { "job.yaml": yaml, ...files });
	return loadIn(dir, "job.yaml", loadOptions);
}

export async function loadIn(dir: string, path: string, options: Omit<LoadJobOptions, "cwd"> = {}): Promise<Outcome> {
	try {
		const loaded = await loadJob(path, { env: {}, ...options, cwd: dir });
		return { errors: [], warnings: loaded.warnings.map(formatProblem), loaded };
	} catch (error) {
		if (!(error instanceof JobValidationError)) throw error;
		return {
			errors: error.problems.filter((p) => p.severity === "error").map(formatProblem),
			warnings: error.problems.filter((p) => p.severity === "warning").map(formatProblem),
			loaded: null,
		};
	}
}

/** A minimal valid job around some keys. */
export function jobWith(lines: string): string {
	return `name: t\n${lines}\n`;
}

/** A writable that keeps the text written to it. */
export class TextSink extends Writable {
	text = "";
	isTTY = false;
	override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
		this.text += chunk.toString();
		callback();
	}
}

export function createTestContext(cwd: string, env: NodeJS.ProcessEnv = {}) {
	const stdout = new TextSink();
	const stderr = new TextSink();
	const ctx: CliContext = { stdout, stderr, env, cwd, exitCode: 0, signal: new AbortController().signal };
	return { ctx, stdout, stderr };
}
