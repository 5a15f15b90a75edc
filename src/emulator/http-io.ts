/**
 * Small helpers for answering on node:http without a framework: the emulator answers thousands of
 * requests a second, so each answer is one `writeHead` + one `end`.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";

export function timestamp(): string {
	return new Date().toISOString();
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers?: OutgoingHttpHeaders): void {
	sendBody(res, status, JSON.stringify(body), "application/json; charset=utf-8", headers);
}

export function sendBody(
	res: ServerResponse,
	status: number,
	body: string | Buffer,
	contentType: string,
	headers?: OutgoingHttpHeaders,
): void {
	if (res.headersSent || res.destroyed) return;
	res.writeHead(status, {
		...headers,
		"content-type": contentType,
		"content-length": typeof body === "string" ? Buffer.byteLength(body) : body.length,
	});
	res.end(body);
}

/** Close the connection without any answer: what a crashed gateway looks like to a client. */
export function dropConnection(req: IncomingMessage, res: ServerResponse): void {
	req.socket.destroy();
	res.destroy();
}

export class BodyTooLargeError extends Error {}

/** Read a request body up to `maxBytes`. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
	return new Promise((resolve, reject) => {
		const chunks: Buffer[] = [];
		let size = 0;
		req.on("data", (chunk: Buffer) => {
			size += chunk.length;
			if (size > maxBytes) {
				reject(new BodyTooLargeError(`request body is larger than ${maxBytes} bytes`));
				req.resume();
				return;
			}
			chunks.push(chunk);
		});
		req.on("end", () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
		req.on("error", reject);
	});
}

/** A query string as an object; a repeated name becomes an array (e.g. `excluded_tags=a&excluded_tags=b`). */
export function queryToObject(query: URLSearchParams): Record<string, string | string[]> {
	const result: Record<string, string | string[]> = {};
	for (const [name, value] of query) {
		const existing = result[name];
		if (existing === undefined) result[name] = value;
		else if (Array.isArray(existing)) existing.push(value);
		else result[name] = [existing, value];
	}
	return result;
}

/** A boolean parameter as the service reads it from JSON or a query string. */
export function isTruthy(value: unknown): boolean {
	return value === true || value === "true" || value === 1 || value === "1";
}

/** Resolves after `ms`, early (without error) when `signal` aborts — the emulator is closing. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
	if (ms <= 0 || signal.aborted) return Promise.resolve();
	return new Promise((resolve) => {
		const done = () => {
			clearTimeout(timer);
			signal.removeEventListener("abort", done);
			resolve();
		};
		const timer = setTimeout(done, ms);
		signal.addEventListener("abort", done, { once: true });
	});
}

/** The 422 record (docs/service.md, "Errors" and "Parameter rules"): each problem as `<parameter>: <problem>` under `details.validation_errors`. */
export function invalidParamsBody(validationErrors: readonly string[]): Record<string, unknown> {
	return {
		success: false,
		error: "Invalid request parameters",
		message: `${validationErrors.length} invalid parameter${validationErrors.length === 1 ? "" : "s"}: ${validationErrors.join("; ")}`,
		details: { validation_errors: validationErrors },
		timestamp: timestamp(),
	};
}
