import { existsSync, lstatSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative } from "node:path";
import { type AtomicFile, openAtomicFile, UsageError } from "../common/index.js";

/**
 * The rules of `export --out` (docs/guides/incremental-runs.md): not inside the job's output
 * folder (an export over a run's results.jsonl would replace the run's own records), not a folder, not an
 * existing file unless `force`, in a folder that exists. Throws a UsageError (exit 2) naming the rule.
 */
export function checkExportTarget(outFile: string, jobDir: string, force: boolean): void {
	if (outFile.trim() === "") throw new UsageError("--out is empty: name the file to write");
	const folder = dirname(outFile);
	if (!existsSync(folder) || !statSync(folder).isDirectory()) {
		throw new UsageError(`--out ${outFile}: the folder ${folder} does not exist`);
	}
	const real = join(realpathSync(folder), basename(outFile));
	const job = existsSync(jobDir) ? realpathSync(jobDir) : jobDir;
	const inside = relative(job, real);
	if (inside === "" || (!inside.startsWith("..") && !isAbsolute(inside))) {
		throw new UsageError(
			`--out ${outFile} is inside the job's output folder ${jobDir}: it holds the runs the export reads; write the export elsewhere`,
		);
	}
	let existing: ReturnType<typeof lstatSync> | null = null;
	try {
		existing = lstatSync(outFile);
	} catch {
		// Not there: the usual case.
	}
	if (existing === null) return;
	const target = existing.isSymbolicLink() && existsSync(outFile) ? statSync(outFile) : existing;
	if (target.isDirectory()) throw new UsageError(`--out ${outFile} is a folder: name a file to write`);
	if (!force) throw new UsageError(`--out ${outFile} exists: pass --force to replace it`);
}

/** A file written under a new temporary name beside its destination, renamed over it once complete (`openAtomicFile`). */
export type TemporaryFile = AtomicFile;

/** The export's file: created by this process (never an existing file, never through a symbolic link), mode 0644. */
export function createTemporaryFile(outFile: string): TemporaryFile {
	return openAtomicFile(outFile, { mode: 0o644 });
}
