import { createHash } from "node:crypto";
import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * Hostile browser services for the browser-bounds tests, as real TCP servers on 127.0.0.1:
 * - `silent`: accepts the WebSocket upgrade (101) and never says another word;
 * - `dropping`: proxies to a real CDP endpoint (the emulator's), but swallows every client frame that
 *   calls one of `dropMethods`, so that call never gets an answer (a service stuck on one command).
 */
export interface HostileCdp {
	/** A `ws://` address to hand the runner as the service's `endpoint_url`. */
	readonly url: string;
	/** CDP commands swallowed so far, by method. */
	readonly dropped: Map<string, number>;
	close(): Promise<void>;
}

const WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

export async function startSilentCdp(): Promise<HostileCdp> {
	const sockets = new Set<Socket>();
	const server = createServer((socket) => {
		sockets.add(socket);
		socket.on("close", () => sockets.delete(socket));
		socket.on("error", () => undefined);
		let head = "";
		const onData = (chunk: Buffer) => {
			head += chunk.toString("latin1");
			if (!head.includes("\r\n\r\n")) return;
			socket.off("data", onData);
			const key = /sec-websocket-key:\s*(\S+)/i.exec(head)?.[1] ?? "";
			const accept = createHash("sha1")
				.update(key + WEBSOCKET_GUID)
				.digest("base64");
			socket.write(
				`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
			);
			// From here on: read everything, answer nothing.
			socket.resume();
		};
		socket.on("data", onData);
	});
	return listen(server, sockets, "/devtools/browser/silent", new Map());
}

export async function startDroppingCdp(upstreamUrl: string, dropMethods: readonly string[]): Promise<HostileCdp> {
	const upstream = new URL(upstreamUrl);
	const dropped = new Map<string, number>();
	const sockets = new Set<Socket>();
	const server = createServer((client) => {
		const service = connect(Number(upstream.port), upstream.hostname);
		for (const socket of [client, service]) {
			sockets.add(socket);
			socket.on("close", () => {
				sockets.delete(socket);
				client.destroy();
				service.destroy();
			});
			socket.on("error", () => undefined);
		}
		service.pipe(client);
		let buffered = Buffer.alloc(0);
		let upgraded = false;
		client.on("data", (chunk: Buffer) => {
			buffered = Buffer.concat([buffered, chunk]);
			if (!upgraded) {
				const end = buffered.indexOf("\r\n\r\n");
				if (end === -1) return;
				// The upgrade request goes to the real service with the path and query of our own address.
				service.write(buffered.subarray(0, end + 4));
				buffered = buffered.subarray(end + 4);
				upgraded = true;
			}
			for (;;) {
				const frame = readClientFrame(buffered);
				if (!frame) return;
				buffered = buffered.subarray(frame.length);
				const method = /"method":"([^"]+)"/.exec(frame.payload.toString("utf8"))?.[1];
				if (method && dropMethods.includes(method)) {
					dropped.set(method, (dropped.get(method) ?? 0) + 1);
					continue;
				}
				service.write(frame.raw);
			}
		});
	});
	const path = `${upstream.pathname}${upstream.search}`;
	return listen(server, sockets, path, dropped);
}

/** One masked client frame (RFC 6455 §5.2) at the start of `data`, or null until it is whole. */
function readClientFrame(data: Buffer): { raw: Buffer; payload: Buffer; length: number } | null {
	if (data.length < 2) return null;
	let length = data[1]! & 0x7f;
	let offset = 2;
	if (length === 126) {
		if (data.length < 4) return null;
		length = data.readUInt16BE(2);
		offset = 4;
	} else if (length === 127) {
		if (data.length < 10) return null;
		length = Number(data.readBigUInt64BE(2));
		offset = 10;
	}
	const masked = (data[1]! & 0x80) !== 0;
	const maskStart = offset;
	if (masked) offset += 4;
	if (data.length < offset + length) return null;
	const payload = Buffer.from(data.subarray(offset, offset + length));
	if (masked)
		for (let index = 0; index < payload.length; index += 1)
			payload[index] = payload[index]! ^ data[maskStart + (index % 4)]!;
	return { raw: data.subarray(0, offset + length), payload, length: offset + length };
}

async function listen(
	server: Server,
	sockets: Set<Socket>,
	path: string,
	dropped: Map<string, number>,
): Promise<HostileCdp> {
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const address = server.address();
	if (address === null || typeof address === "string") throw new Error("no address");
	return {
		url: `ws://127.0.0.1:${address.port}${path}`,
		dropped,
		close: async () => {
			for (const socket of sockets) socket.destroy();
			await new Promise<void>((resolve) => server.close(() => resolve()));
		},
	};
}
