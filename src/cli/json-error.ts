import { errorMessage, ScrapejobError } from "../common/index.js";
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
