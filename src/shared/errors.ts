/**
 * Base of every error scrapejob throws on purpose. Each layer derives its own errors from it
 * with a stable `code` users and the CLI can match on (the way undici's `UND_ERR_*` codes work),
 * so no caller ever has to parse a message.
 */
export class ScrapejobError extends Error {
	readonly code: string;

	constructor(code: string, message: string, options?: { cause?: unknown }) {
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
