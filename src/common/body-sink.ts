/**
 * Where a response body goes instead of memory, handed to the HTTP layer by its caller (the way an
 * undici dispatcher is handed a handler): `api` reads the socket and passes each chunk on; what is
 * done with the bytes — a file in the run folder, nothing at all — is the caller's. `api` never opens
 * a file.
 *
 * Calls come in one order: `write` for every chunk, then exactly one of `end` (the body is whole) or
 * `abort` (it is not: past its cap, past its deadline, the run stopped, the connection broke, or a
 * `write` or `end` of this sink threw).
 */
export interface BodySink {
	/** The next chunk of the body. A throw ends the answer (the request is aborted; `abort` follows). */
	write(chunk: Buffer): void;
	/**
	 * The body is whole: close what holds it. Returns the caller's own name for it (the page store's
	 * file), passed back untouched in the response. A throw fails the answer as for `write`.
	 */
	end(): string;
	/** The body will not finish: drop what was written (remove the file). Must not throw. */
	abort(): void;
}
