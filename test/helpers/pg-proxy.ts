import { connect, createServer, type Socket } from "node:net";
import { onTestFinished } from "vitest";

/**
 * A TCP relay in front of a PostgreSQL server on 127.0.0.1 that can lose one answer: once armed with a
 * prepared statement's name, the next time a client sends that statement the server's whole answer is
 * held back until the server says it is ready again (the statement committed), and then the connection
 * is cut. The client sees a dropped connection for a statement that took effect. It can also cut every
 * client off for good (`cut`): the database lost to them, and to them only.
 */
export interface AnswerLosingProxy {
	/** The server's URL with the relay's port in it. */
	readonly url: string;
	/** Lose the answer to the next execution of the statement named `name`. */
	loseNextAnswer(name: string): void;
	/** Resolves once an answer was lost (the connection cut after the server's ready message). */
	readonly lost: Promise<void>;
	/** Every connection through the relay dropped, and every new one closed at once, from now on. */
	cut(): void;
}

/** A relay for `url` (a `postgres://…@127.0.0.1:port/db` URL), closed when the test finishes. */
export async function startAnswerLosingProxy(url: string): Promise<AnswerLosingProxy> {
	const target = new URL(url);
	let armed: string | null = null;
	let markLost: () => void = () => undefined;
	const lost = new Promise<void>((resolve) => {
		markLost = resolve;
	});
	const sockets = new Set<Socket>();
	let cut = false;
	const server = createServer((client) => {
		if (cut) {
			client.destroy();
			return;
		}
		const upstream = connect(Number(target.port), target.hostname);
		sockets.add(client).add(upstream);
		const end = () => {
			client.destroy();
			upstream.destroy();
		};
		client.on("error", end).on("close", end);
		upstream.on("error", end).on("close", end);
		/** This connection is the one whose answer is lost: the server's bytes from here on are parsed, not sent. */
		let losing = false;
		let pending = Buffer.alloc(0);
		client.on("data", (chunk: Buffer) => {
			// A Bind (or Parse) names the statement: the client sends one query at a time, so every byte the
			// server sends from now on answers it.
			if (armed !== null && chunk.includes(Buffer.from(`${armed}\0`))) {
				armed = null;
				losing = true;
			}
			upstream.write(chunk);
		});
		upstream.on("data", (chunk: Buffer) => {
			if (!losing) {
				client.write(chunk);
				return;
			}
			pending = Buffer.concat([pending, chunk]);
			// Server messages: a type byte, then a length that counts itself. ReadyForQuery ('Z') comes after
			// the implicit transaction committed.
			for (let at = 0; at + 5 <= pending.length; ) {
				const type = String.fromCharCode(pending[at]!);
				const length = pending.readUInt32BE(at + 1);
				if (at + 1 + length > pending.length) break;
				if (type === "Z") {
					end();
					markLost();
					return;
				}
				at += 1 + length;
			}
		});
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const address = server.address();
	if (address === null || typeof address === "string") throw new Error("the relay has no port");
	onTestFinished(async () => {
		for (const socket of sockets) socket.destroy();
		await new Promise<void>((resolve) => server.close(() => resolve()));
	});
	const relayed = new URL(url);
	relayed.hostname = "127.0.0.1";
	relayed.port = String(address.port);
	return {
		url: relayed.toString(),
		loseNextAnswer(name) {
			armed = name;
		},
		lost,
		cut() {
			cut = true;
			for (const socket of sockets) socket.destroy();
		},
	};
}
