import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { listenForTest } from "./loopback.js";

/** One request the site was sent: its raw path (as written on the wire) and its Authorization header. */
export interface SiteRequest {
	readonly path: string;
	readonly authorization: string | undefined;
}

export interface TargetSite {
	/** `http://127.0.0.1:PORT` */
	readonly origin: string;
	readonly requests: SiteRequest[];
}

/**
 * A target site on a loopback port for the running test, closed when it finishes: `handle` answers each
 * request (hostile answers included: slow bodies, giant streams, gzip). Every request is kept, in order,
 * for assertions.
 */
export async function startTargetSite(
	handle: (req: IncomingMessage, res: ServerResponse, origin: string) => void,
): Promise<TargetSite> {
	const requests: SiteRequest[] = [];
	let origin = "";
	const server = createServer((req, res) => {
		requests.push({ path: req.url ?? "/", authorization: req.headers.authorization });
		handle(req, res, origin);
	});
	origin = await listenForTest(server);
	return { origin, requests };
}

export function html(res: ServerResponse, body: string, status = 200): void {
	res.writeHead(status, { "content-type": "text/html; charset=utf-8" }).end(`<html><body>${body}</body></html>`);
}
