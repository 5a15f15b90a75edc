import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the site was sent: its raw path (as written on the wire) and its Authorization header. */
export interface SiteRequest {
	readonly path: string;
	readonly authorization: string | undefined;
}

export interface TargetSite {
	/** `http://127.0.0.1:PORT` */
	readonly origin: string;
	readonly requests: SiteRequest[];
	close(): Promise<void>;
}

/**
 * A target site on a loopback port for one test: `handle` answers each request (hostile answers
 * included: slow bodies, giant streams, gzip). Every request is kept, in order, for assertions.
 */
export async function startTargetSite(
	handle: (req: IncomingMessage, res: ServerResponse, origin: string) => void,
): Promise<TargetSite> {
	const requests: SiteRequest[] = [];
	let origin = "";
	const server: Server = createServer((req, res) => {
		requests.push({ path: req.url ?? "/", authorization: req.headers.authorization });
		handle(req, res, origin);
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	return {
		origin,
		requests,
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

export function html(res: ServerResponse, body: string, status = 200): void {
	res.writeHead(status, { "content-type": "text/html; charset=utf-8" }).end(`<html><body>${body}</body></html>`);
}
