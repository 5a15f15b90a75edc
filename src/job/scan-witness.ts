import { type BigIntStats, statSync } from "node:fs";
import { createTargetKeySet, type TargetKeySet } from "./dedupe.js";

/**
 * What a validation pass saw of a job's rows, so that a run's feed reading the same files can leave out
 * its own duplicate check (a key set of every row: ~4 MB at 100,000 rows and ~18 MB at ten million,
 * plus a lookup a row). The feed then drops only the keys listed here, and hands over a row only while
 * its file is provably the one validated: same file, size and change times, looked at after the row was
 * read. A file that changes under the run ends the feed there (`invalid_source`), as a bad row does.
 */
export interface ScanWitness {
	/** Keys of the targets listed more than once: the feed keeps each one's first row only. */
	readonly repeated: TargetKeySet;
	/** Each source file's identity while the validation pass read it (absolute path → identity). */
	readonly files: ReadonlyMap<string, string>;
}

/**
 * At most this many repeated keys are kept (8–16 bytes each); a list repeating more rows than that
 * gets no witness, and its feed keeps the full duplicate check.
 */
const MAX_REPEATED_KEYS = 65_536;

/**
 * A file's identity as the kernel keeps it: device, inode, size and the modification and change times
 * in nanoseconds. Any write, truncation or rename over the path changes it; reading does not.
 */
export function fileIdentity(path: string): string | null {
	let stats: BigIntStats;
	try {
		stats = statSync(path, { bigint: true });
	} catch {
		return null;
	}
	return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
}

/** Builds a witness while a validation pass reads the job: `null` when it cannot vouch for the rows. */
export interface WitnessRecorder {
	/** Before a source is read. */
	opening(source: { readonly path: string }): void;
	/** After a source has been read to its end. */
	ended(source: { readonly path: string }): void;
	/** A row repeated an earlier one. */
	repeated(high: number, low: number): void;
	finish(): ScanWitness | null;
}

export function createWitnessRecorder(): WitnessRecorder {
	const repeated = createTargetKeySet();
	const files = new Map<string, string>();
	let broken = false;
	return {
		opening(source) {
			const identity = fileIdentity(source.path);
			if (identity === null) broken = true;
			else files.set(source.path, identity);
		},
		ended(source) {
			// Changed while it was read: the rows counted may be no version of the file the feed will read.
			if (fileIdentity(source.path) !== files.get(source.path)) broken = true;
		},
		repeated(high, low) {
			if (repeated.size >= MAX_REPEATED_KEYS) broken = true;
			else repeated.add(high, low);
		},
		finish: () => (broken ? null : { repeated, files }),
	};
}

/**
 * The feed's duplicate check under a witness: a repeated key passes once, every other key always — the
 * validation pass saw it once in these very files.
 */
export function witnessedKeys(witness: ScanWitness): { add(high: number, low: number): boolean } {
	const taken = createTargetKeySet(16);
	return {
		add: (high, low) => !witness.repeated.has(high, low) || taken.add(high, low),
	};
}
