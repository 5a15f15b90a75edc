import { errorMessage, ScrapejobError } from "../common/index.js";
import { type CliContext, writeLine } from "./context.js";

/**
 * With `--json`, a command that fails still answers on stdout in JSON, so a script reading stdout
 * learns why (the human-readable line still goes to stderr, and `main` still decides the exit code).
 */
export function printJsonError(ctx: CliContext, error: unknown): void {
	const code = error instanceof ScrapejobError ? error.code : "INTERNAL";
	writeLine(ctx.stdout, JSON.stringify({ error: { code, message: errorMessage(error) } }));
}
