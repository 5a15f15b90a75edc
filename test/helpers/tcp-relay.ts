import { connect, createServer, type Socket } from "node:net";
import { onTestFinished } from "vitest";

/**
 * A TCP relay on 127.0.0.1 in front of a server on 127.0.0.1: a network between the run and the service
 * that can go down (`cut`: every connection dropped, every new one reset) and come back (`restore`) while
 * the server behind it keeps its state. Closed when the test finishes.
 */
export interface TcpRelay {
	/** `http://127.0.0.1:<relay port>` */
	readonly origin: string;
	/** Connections reset since the last `cut` (each a request that met the network down). */
	readonly refused: number;
	cut(): void;
	restore(): void;
}

export async function startTcpRelay(targetPort: number): Promise<TcpRelay> {
	const sockets = new Set<Socket>();
	let down = false;
	let refused = 0;
	const server = createServer((client) => {
		if (down) {
			refused += 1;
			client.resetAndDestroy();
			return;
		}
		const upstream = connect(targetPort, "127.0.0.1");
		sockets.add(client).add(upstream);
		const end = () => {
			client.destroy();
			upstream.destroy();
			sockets.delete(client);
			sockets.delete(upstream);
		};
		client.on("error", end).on("close", end);
		upstream.on("error", end).on("close", end);
		client.pipe(upstream);
		upstream.pipe(client);
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const address = server.address();
	if (address === null || typeof address === "string") throw new Error("the relay has no port");
	onTestFinished(async () => {
		for (const socket of sockets) socket.destroy();
		await new Promise<void>((resolve) => server.close(() => resolve()));
	});
	return {
		origin: `http://127.0.0.1:${address.port}`,
		get refused() {
			return refused;
		},
		cut() {
			down = true;
			refused = 0;
			for (const socket of sockets) socket.destroy();
		},
		restore() {
			down = false;
		},
	};
}
