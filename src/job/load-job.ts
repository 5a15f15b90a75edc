import { resolve } from "node:path";
import {
	checkOptions,
	errorMessage,
	LIBRARY_WORDS,
	type OptionKinds,
	type OptionWords,
	redactSecrets,
} from "../common/index.js";
import { expandEnvInDocument } from "./expand-env.js";
import { displayPathFor, type NormalizeContext, normalizeJob, normalizePartialJob } from "./normalize.js";
import { MAX_JOB_FILE_BYTES, parseJobYaml, readJobText } from "./parse-yaml.js";
import { type DataPath, formatPath, locatePath } from "./positions.js";
import { type JobProblem, JobValidationError } from "./problems.js";
import { checkJobRules } from "./rules.js";
import { jobFileSchema } from "./schema.js";
import { scanJob } from "./stream-targets.js";
import type { Job, TargetCounts } from "./types.js";
import type { VariablesNeeded } from "./variables-needed.js";
import { describeIssue, issuesToProblems, type PathProblem } from "./zod-issues.js";

/** Options of `loadJob`. */
export interface LoadJobOptions {
	/** Variables for `${NAME}` in string values. @default process.env */
	env?: NodeJS.ProcessEnv;
	/** Directory the job path is resolved against and messages are made relative to. @default process.cwd() */
	cwd?: string;
	/**
	 * Stream every source to check its rows (and count targets) before returning. Off, only the
	 * job file itself is checked, and bad rows surface later through `streamTargets`.
	 * @default true
	 */
	checkSources?: boolean;
	/** Stops reading the sources (`SourceScanStoppedError`): Ctrl-C during a long validation. */
	signal?: AbortSignal;
	/** Job files larger than this are refused unread. @default MAX_JOB_FILE_BYTES (10 MiB) */
	maxFileBytes?: number;
	/**
	 * Where an unset `${NAME}` is a problem. Elsewhere it stays written as `${NAME}`, and is reported only
	 * if the value is then invalid: for callers that read part of a job (`export` reads its name and output
	 * settings). @default everywhere
	 */
	variablesNeeded?: VariablesNeeded;
}

/** Each option of `loadJob` and the kind of value it takes: the names a call may use, from its interface. */
const LOAD_JOB_OPTIONS = {
	env: "object",
	cwd: "string",
	checkSources: "boolean",
	signal: "signal",
	maxFileBytes: "number",
	variablesNeeded: "function",
} as const satisfies OptionKinds<LoadJobOptions>;

/** What `loadJob` returns: the normalized job, its warnings, and the counts found while checking its sources. */
export interface LoadedJob {
	job: Job;
	/** Duplicates, skipped rows, empty sources, YAML warnings. */
	warnings: JobProblem[];
	/** What streaming the sources found; `null` when `checkSources` is false. */
	counts: TargetCounts | null;
}

/**
 * The job's data without the parts holding these paths: a target or source entry, a key of `defaults`, or
 * a top-level key. Only for parts the caller does not read.
 */
function withoutParts(data: Record<string, unknown>, paths: ReadonlyArray<DataPath>): Record<string, unknown> {
	const copy: Record<string, unknown> = { ...data };
	const dropped = new Map<string, Set<PropertyKey>>();
	for (const [key, part] of paths) {
		if (typeof key !== "string") continue;
		if ((key === "targets" || key === "sources" || key === "defaults") && part !== undefined) {
			const parts = dropped.get(key) ?? new Set<PropertyKey>();
			dropped.set(key, parts.add(part));
		} else delete copy[key];
	}
	for (const [key, parts] of dropped) {
		const value = copy[key];
		if (Array.isArray(value)) copy[key] = value.filter((_, index) => !parts.has(index));
		else if (value !== null && typeof value === "object")
			copy[key] = Object.fromEntries(Object.entries(value).filter(([name]) => !parts.has(name)));
	}
	return copy;
}

/** Shortest variable value a problem's message spells back as `${NAME}`. */
const MIN_SPELLED_VALUE = 8;

function sortByPosition(problems: JobProblem[]): JobProblem[] {
	return problems.sort((a, b) => a.line - b.line || a.col - b.col);
}

/**
 * Load, validate and normalize a job file (habit 2): YAML with positions → `${VAR}` expansion →
 * schema → cross-field rules → normalized `Job` → sources streamed. Throws `JobValidationError`
 * carrying every problem, each with `file:line:col`, and `UsageError` for an option it does not have
 * (a misspelt name); never sends anything anywhere.
 */
export function loadJob(path: string, options: LoadJobOptions = {}): Promise<LoadedJob> {
	return loadJobWorded(path, options, LIBRARY_WORDS);
}

/** `loadJob` with the entry point's words for its hints: the CLI's commands pass `CLI_WORDS`. */
export async function loadJobWorded(path: string, options: LoadJobOptions, words: OptionWords): Promise<LoadedJob> {
	checkOptions("loadJob", options, LOAD_JOB_OPTIONS);
	// A `${SCRAPEJOB_ACCOUNT_KEY}` in a bad URL, or a source pointed at the env file, must not print a key.
	const env = options.env ?? process.env;
	const keys = Object.entries(env)
		.filter(([name, value]) => /^SCRAPEJOB_.*KEY$/.test(name) && typeof value === "string" && value.length >= 4)
		.map(([, value]) => value as string);
	// Nor a `${API_TOKEN}` in a target's query: a message shows each variable's value as the file spells it.
	const expanded = new Map<string, string>();
	const onExpanded = (name: string, value: string) => {
		// Short values (`us`, `1`) would stand for words of the message that are not them.
		if (value.length >= MIN_SPELLED_VALUE) expanded.set(value, name);
	};
	// Longest value first, sorted once for every message (a source's duplicate rows are a warning each).
	const scrubber = () => {
		const values = [...expanded].sort(([a], [b]) => b.length - a.length);
		return (problem: JobProblem): JobProblem => {
			let message = problem.message;
			for (const [value, name] of values)
				if (message.includes(value)) message = message.replaceAll(value, () => `\${${name}}`);
			message = redactSecrets(message, keys);
			return message === problem.message ? problem : { ...problem, message };
		};
	};
	try {
		const loaded = await loadJobUnredacted(path, options, onExpanded, words);
		return { ...loaded, warnings: loaded.warnings.map(scrubber()) };
	} catch (error) {
		if (error instanceof JobValidationError) throw new JobValidationError(error.problems.map(scrubber()));
		throw error;
	}
}

async function loadJobUnredacted(
	path: string,
	options: LoadJobOptions,
	onExpanded: (name: string, value: string) => void,
	words: OptionWords,
): Promise<LoadedJob> {
	const cwd = options.cwd ?? process.cwd();
	const env = options.env ?? process.env;
	const file = resolve(cwd, path);
	const displayFile = displayPathFor(file, cwd);
	const problemAt = (line: number, col: number, message: string, severity: JobProblem["severity"] = "error") => ({
		file: displayFile,
		line,
		col,
		message,
		severity,
	});

	const read = await readJobText(file, options.maxFileBytes ?? MAX_JOB_FILE_BYTES);
	if (!read.ok) throw new JobValidationError([problemAt(read.problem.line, read.problem.col, read.problem.message)]);

	const parsed = parseJobYaml(read.text, words);
	const yamlWarnings = parsed.warnings.map((w) => problemAt(w.line, w.col, w.message, "warning"));
	if (parsed.errors.length > 0) {
		throw new JobValidationError([...parsed.errors.map((e) => problemAt(e.line, e.col, e.message)), ...yamlWarnings]);
	}
	const { doc, lineCounter } = parsed;

	const envProblems = expandEnvInDocument(doc, read.text, env, onExpanded);
	let data: Record<string, unknown>;
	try {
		data = doc.toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
	} catch (error) {
		// Unresolved aliases, alias bombs: YAML that parses but cannot become data.
		throw new JobValidationError([problemAt(1, 1, `YAML error: ${errorMessage(error)}`)]);
	}

	const problems: JobProblem[] = [];
	// Unset variables where the caller does not read stay written as `${NAME}` and are not problems.
	const needed = options.variablesNeeded ?? (() => true);
	const neededEnvProblems: typeof envProblems = [];
	const unread: DataPath[] = [];
	for (const problem of envProblems) {
		if (needed(problem.path)) neededEnvProblems.push(problem);
		else unread.push(problem.path);
	}
	const unreadPaths = new Set(unread.map(formatPath));
	// One missing variable used on every target would be forty identical lines: report the first use, with a count.
	const uses = new Map<string, number>();
	for (const problem of neededEnvProblems) uses.set(problem.message, (uses.get(problem.message) ?? 0) + 1);
	for (const problem of neededEnvProblems) {
		const count = uses.get(problem.message);
		if (count === undefined) continue;
		uses.delete(problem.message);
		const at = lineCounter.linePos(problem.offset);
		const more = count > 1 ? ` (used ${count} times; this is the first)` : "";
		const pathText = formatPath(problem.path);
		const message = `${pathText}: ${problem.message}${more}${problem.hint ?? ""}`;
		problems.push({ ...problemAt(at.line, at.col, message), path: pathText });
	}
	// A value with an unset variable has been reported (or is not read); checking what is left of it would only add noise.
	const reported = new Set([...neededEnvProblems.map((p) => formatPath(p.path)), ...unreadPaths]);

	// `jitless`: zod compiles a parser for each object schema on its first parse (`new Function`), which
	// pays only when a schema parses many inputs; a job file is parsed once: ~5 ms less before a run starts.
	const parse = (input: Record<string, unknown>) =>
		jobFileSchema.safeParse(input, { reportInput: true, error: describeIssue, jitless: true });
	let result = parse(data);
	// A value the caller does not read that fails its check as written (`url: ${TARGET_URL}`) is left out
	// of the job returned; problems elsewhere are reported at their places in the file as written.
	if (!result.success && result.error.issues.some((issue) => unreadPaths.has(formatPath(issue.path)))) {
		const withoutUnread = parse(withoutParts(data, unread));
		if (withoutUnread.success) result = withoutUnread;
	}
	const schemaProblems = result.success ? [] : issuesToProblems(result.error.issues, jobFileSchema, data, words);
	const ruleProblems = checkJobRules(data);
	const place = (p: PathProblem): JobProblem => {
		const at = locatePath(doc, lineCounter, p.at ?? p.path, { atKey: p.atKey ?? false });
		const pathText = formatPath(p.path);
		return { ...problemAt(at.line, at.col, pathText === "" ? p.message : `${pathText}: ${p.message}`), path: pathText };
	};
	for (const problem of schemaProblems) {
		const pathText = formatPath(problem.path);
		if (reported.has(pathText)) continue;
		reported.add(pathText);
		problems.push(place(problem));
	}
	// The schema and the rules both know the service's single-value parameter rules; say each thing once.
	for (const problem of ruleProblems) {
		const pathText = formatPath(problem.path);
		if (reported.has(pathText)) continue;
		reported.add(pathText);
		problems.push(place(problem));
	}
	sortByPosition(problems);

	const ctx: NormalizeContext = { file, displayFile, cwd, locate: (p) => locatePath(doc, lineCounter, p) };
	const valid = result.success && problems.length === 0;
	const job = valid && result.data ? normalizeJob(result.data, ctx) : normalizePartialJob(data, ctx);

	const warnings = [...yamlWarnings];
	let counts: TargetCounts | null = null;
	if (options.checkSources ?? true) {
		const scan = await scanJob(job, options.signal ? { signal: options.signal } : {});
		counts = scan.counts;
		for (const problem of scan.problems) (problem.severity === "error" ? problems : warnings).push(problem);
	}
	if (!valid || problems.length > 0) throw new JobValidationError([...problems, ...warnings]);
	return { job, warnings, counts };
}
