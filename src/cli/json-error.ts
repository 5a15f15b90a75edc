import type { Command, CommanderError } from "commander";
import { errorMessage, ScrapejobError, UsageError } from "../common/index.js";
import { formatProblem, JobValidationError } from "../job/index.js";
import { type CliContext, writeLine } from "./context.js";
import { EXIT } from "./exit-codes.js";

/**
 * With `--json`, a command that fails still answers on stdout in JSON, so a script reading stdout
 * learns why (the human-readable line still goes to stderr, and `main` still decides the exit code).
 * An invalid job carries its problems (errors only, each with its file, line and column).
 */
export function printJsonError(ctx: CliContext, error: unknown): void {
	const code = error instanceof ScrapejobError ? error.code : "INTERNAL";
	const problems =
		error instanceof JobValidationError
			? { problems: error.problems.filter((problem) => problem.severity === "error") }
			: {};
	writeLine(ctx.stdout, JSON.stringify({ error: { code, message: errorMessage(error), ...problems } }));
}

/** `work`, whose failure is also answered on stdout in JSON when `json` is set (then thrown on to `main`). */
export async function answeringErrorsInJson<T>(ctx: CliContext, json: boolean, work: () => Promise<T>): Promise<T> {
	try {
		return await work();
	} catch (error) {
		if (json) printJsonError(ctx, error);
		throw error;
	}
}

/**
 * A job file that does not load: each problem on stderr at its `file:line:col`, the JSON answer with
 * `--json`, exit 2. Anything else is thrown on.
 */
export function answerInvalidJob(ctx: CliContext, json: boolean, error: unknown): void {
	if (!(error instanceof JobValidationError)) throw error;
	for (const problem of error.problems) writeLine(ctx.stderr, formatProblem(problem));
	if (json) printJsonError(ctx, error);
	ctx.exitCode = EXIT.invalidInput;
}

/** The commands whose failures with `--json` answer on stdout (docs/reference/cli.md), as typed. */
const ANSWERING_IN_JSON = new Set([
	"run",
	"validate",
	"export",
	"extract",
	"health",
	"fleet status",
	"account",
	"usage",
	"task",
	"proxies",
	"targeting",
	"report",
	"merge",
]);

/**
 * A usage error commander found (unknown option, missing argument, invalid value) in the command line of
 * one of those commands with `--json`: answered on stdout as the command's own errors are, so a script
 * gets its one line whichever part of scrapejob refused it. Commander has said it on stderr already.
 */
export function answerCommanderErrorInJson(
	ctx: CliContext,
	program: Command,
	argv: readonly string[],
	error: CommanderError,
): void {
	const names: string[] = [];
	let command = program;
	for (const word of argv) {
		const sub = command.commands.find((candidate) => candidate.name() === word || candidate.aliases().includes(word));
		if (sub === undefined) break;
		names.push(word);
		command = sub;
	}
	const options = argv.slice(names.length, argv.includes("--") ? argv.indexOf("--") : undefined);
	if (!ANSWERING_IN_JSON.has(names.join(" ")) || !options.includes("--json")) return;
	printJsonError(ctx, new UsageError(error.message.replace(/^error: /, "")));
}
