import { maskCredentialsInText, ScrapejobError } from "../common/index.js";

/** One thing wrong (or worth a look) in a job file or one of its sources, pointed at precisely. */
export interface JobProblem {
	/** The file as the user would type it: relative to the working directory when it lies below it. */
	file: string;
	/** 1-based. */
	line: number;
	/** 1-based, in characters. */
	col: number;
	message: string;
	/** Errors stop the job before a credit is spent; warnings (duplicates, skipped rows) do not. */
	severity: "error" | "warning";
	/** Where in the YAML the problem sits (`targets[2].mode`), when it sits in the job file. */
	path?: string;
}

/** `file:line:col message` — the shape editors and terminals turn into a link. Warnings say so. */
export function formatProblem(p: JobProblem): string {
	return `${p.file}:${p.line}:${p.col} ${p.severity === "warning" ? "warning: " : ""}${p.message}`;
}

export function isError(p: JobProblem): boolean {
	return p.severity === "error";
}

/** How many problems the error's message lists; all of them stay in `problems`. */
const MESSAGE_PROBLEM_LIMIT = 20;

/**
 * A stop (Ctrl-C, SIGTERM, an aborted signal) before the first fetch — while the sources were read, or
 * while the account was looked up — : nothing was sent and no new run folder exists. Its code is
 * `SCRAPEJOB_ABORTED`, which the CLI maps to exit code 130.
 */
export class SourceScanStoppedError extends ScrapejobError {
	/**
	 * @param rowsRead source rows read when it stopped
	 * @param stage what it stopped instead of reading the sources (`"while connecting to the service"`)
	 */
	constructor(rowsRead: number, stage?: string, options?: { cause?: unknown }) {
		super(
			"SCRAPEJOB_ABORTED",
			stage === undefined
				? `stopped while reading the job's sources (${rowsRead} ${rowsRead === 1 ? "row" : "rows"} read): nothing was sent`
				: `stopped ${stage}: nothing was sent`,
			options,
		);
	}
}

/**
 * A job that must not run: every problem found, in one throw, so a user fixes them in one round.
 * Its code is `SCRAPEJOB_JOB_INVALID`, which the CLI maps to exit code 2.
 */
export class JobValidationError extends ScrapejobError {
	readonly problems: JobProblem[];

	constructor(problems: JobProblem[], options?: { cause?: unknown }) {
		const errors = problems.filter(isError);
		const shown = errors.slice(0, MESSAGE_PROBLEM_LIMIT).map((p) => `  ${formatProblem(p)}`);
		const more = errors.length > shown.length ? [`  … and ${errors.length - shown.length} more`] : [];
		const head = `invalid job (${errors.length} ${errors.length === 1 ? "problem" : "problems"}):`;
		super("SCRAPEJOB_JOB_INVALID", [head, ...shown, ...more].join("\n"), options);
		this.problems = problems;
	}
}

/** Quote a value for a message, short enough to stay on one line. */
export function quoteValue(value: unknown, maxChars = 80): string {
	let text: string;
	// Quoted values come from job files and sources: a URL's password never reaches the message.
	if (typeof value === "string") text = JSON.stringify(maskCredentialsInText(value));
	else if (value === undefined) text = "nothing";
	else {
		try {
			text = JSON.stringify(value) ?? String(value);
		} catch {
			text = String(value);
		}
	}
	return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}

/** What a YAML value is, in the words of the messages. */
export function describeValue(value: unknown): string {
	if (value === null || value === undefined) return "nothing";
	if (Array.isArray(value)) return "a list";
	if (typeof value === "object") return "a mapping";
	if (typeof value === "string") return quoteValue(value, 60);
	return quoteValue(value, 60);
}
