/**
 * Every code a ScrapejobError can carry: the CLI maps them to exit codes, `--json` errors print them.
 * A code not listed here cannot be thrown, so no mapping can wait for a code that never comes.
 */
export const ERROR_CODES = [
	"SCRAPEJOB_USAGE",
	"SCRAPEJOB_JOB_INVALID",
	"SCRAPEJOB_LOCK_HELD",
	"SCRAPEJOB_OUTPUT",
	"SCRAPEJOB_NO_ACCESS",
	"SCRAPEJOB_SERVICE_ERROR",
	"SCRAPEJOB_NETWORK",
	"SCRAPEJOB_NOT_THE_SERVICE",
	"SCRAPEJOB_NATIVE_MODULE",
	"SCRAPEJOB_UNEXPECTED_RESPONSE",
	"SCRAPEJOB_ABORTED",
	"SCRAPEJOB_BODY_TOO_LARGE",
	"SCRAPEJOB_BROWSER_REFUSED",
	"SCRAPEJOB_BROWSER_BUSY",
	"SCRAPEJOB_BROWSER_LOST",
	"SCRAPEJOB_BROWSER_NAVIGATION",
	"SCRAPEJOB_BROWSER_STEP",
	"SCRAPEJOB_BROWSER_SESSION_LENGTH",
	"SCRAPEJOB_FLEET_SCHEMA",
	"SCRAPEJOB_FLEET_DATABASE",
] as const;
/** The stable `code` of every `ScrapejobError`: what a caller (and the CLI's exit code) matches on. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * Base of every error scrapejob throws on purpose. Each layer derives its own errors from it
 * with a stable `code` users and the CLI can match on (the way undici's `UND_ERR_*` codes work),
 * so no caller ever has to parse a message.
 */
export class ScrapejobError extends Error {
	readonly code: ErrorCode;

	constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
		super(message, options);
		this.name = new.target.name;
		this.code = code;
	}
}

/** A usage mistake: bad flag, bad config file, missing key. Nothing was sent. */
export class UsageError extends ScrapejobError {
	constructor(message: string, options?: { cause?: unknown }) {
		super("SCRAPEJOB_USAGE", message, options);
	}
}

/** Narrow an unknown caught value to a message without ever printing `[object Object]`. */
export function errorMessage(error: unknown): string {
	if (error instanceof Error) return error.message;
	if (typeof error === "string") return error;
	try {
		return JSON.stringify(error);
	} catch {
		return String(error);
	}
}

/**
 * A package's native addon cannot be loaded in this Node (built for another version: npm reused a build
 * made under another Node, or the Node was upgraded after `npm ci`). Said as what it is, with the command
 * that rebuilds it — never as the disk's fault. Nothing was sent. Thrown by `runJobFile` and
 * `extractJobFile` when the job's store (better-sqlite3) cannot be loaded; code `SCRAPEJOB_NATIVE_MODULE`.
 */
export class NativeModuleError extends ScrapejobError {
	/** The package whose addon failed to load. */
	readonly module: string;
	constructor(module: string, cause: unknown) {
		const text = cause instanceof Error ? cause.message : String(cause);
		const built = /NODE_MODULE_VERSION (\d+)[\s\S]*?NODE_MODULE_VERSION (\d+)/.exec(text);
		const why = built
			? `it was built for another Node (NODE_MODULE_VERSION ${built[1]}; Node ${process.version} needs ${built[2]})`
			: `its native addon does not load in Node ${process.version} (${text.split("\n")[0]})`;
		super(
			"SCRAPEJOB_NATIVE_MODULE",
			`${module} cannot be loaded: ${why}. Rebuild it for this Node with \`npm rebuild ${module}\` in scrapejob's folder (or run \`npm ci\` again under this Node); nothing was sent`,
			{ cause },
		);
		this.module = module;
	}
}

/** Whether an error is a native addon that failed to load (`process.dlopen`). */
export function isNativeLoadFailure(error: unknown): boolean {
	const code = (error as { code?: unknown } | null)?.code;
	return code === "ERR_DLOPEN_FAILED" || (error instanceof Error && /NODE_MODULE_VERSION/.test(error.message));
}
