import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
	chmodSync,
	chownSync,
	existsSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	rmSync,
	writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import pg from "pg";

/**
 * A throwaway PostgreSQL cluster for the fleet's tests and benchmarks: `initdb` into a temporary folder, the server on
 * a free loopback port with durability off (fsync, synchronous_commit, full_page_writes: a crash loses
 * nothing a test needs), password authentication so URLs carry a real secret. The server refuses to run
 * as root, so as root it runs as `postgres` (or `nobody`). When it cannot start, the caller's test fails
 * with the reason: the fleet is never left untested because a binary is missing.
 */
export interface TestCluster {
	readonly host: string;
	readonly port: number;
	readonly user: string;
	readonly password: string;
	/** A fresh, empty database; its URL (with the password in it). */
	createDatabase(): Promise<string>;
	/**
	 * The server shuts down (fast: every connection cut, new ones refused) and stays down, its data kept,
	 * until `up`: the fleet's database lost mid-run.
	 */
	down(): Promise<void>;
	/** The server started again on the same port, on the same data, once it accepts connections. */
	up(): Promise<void>;
	stop(): Promise<void>;
}

const USER = "scrapejob";
const PASSWORD = "fleet-test-pw-7Qx9";

function binDir(): string {
	for (const dir of (process.env.PATH ?? "").split(":")) {
		if (dir && existsSync(join(dir, "initdb")) && existsSync(join(dir, "postgres"))) return dir;
	}
	const root = "/usr/lib/postgresql";
	const versions = existsSync(root)
		? readdirSync(root)
				.filter((name) => existsSync(join(root, name, "bin", "initdb")))
				.sort((a, b) => Number(b) - Number(a))
		: [];
	if (versions.length === 0) {
		throw new Error(
			"PostgreSQL is not installed: no initdb on PATH nor in /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)",
		);
	}
	return join(root, versions[0]!, "bin");
}

/** The unprivileged account the server runs as when this process is root; null when it is not root. */
function serverAccount(): { name: string; uid: number; gid: number } | null {
	if (process.getuid?.() !== 0) return null;
	const passwd = readFileSync("/etc/passwd", "utf8").split("\n");
	for (const name of ["postgres", "nobody"]) {
		const line = passwd.find((entry) => entry.startsWith(`${name}:`));
		if (!line) continue;
		const [, , uid, gid] = line.split(":");
		return { name, uid: Number(uid), gid: Number(gid) };
	}
	throw new Error("running as root, and neither a postgres nor a nobody account exists to run the server as");
}

async function freePort(): Promise<number> {
	const server = createServer();
	await new Promise<void>((resolve, reject) => {
		server.once("error", reject);
		server.listen(0, "127.0.0.1", () => resolve());
	});
	const address = server.address();
	await new Promise<void>((resolve) => server.close(() => resolve()));
	if (address === null || typeof address === "string") throw new Error("no free loopback port");
	return address.port;
}

function asAccount(account: ReturnType<typeof serverAccount>, command: string, args: string[]): [string, string[]] {
	return account === null ? [command, args] : ["runuser", ["-u", account.name, "--", command, ...args]];
}

export async function startCluster(): Promise<TestCluster> {
	const bin = binDir();
	const account = serverAccount();
	// Under /tmp itself: the run's TMPDIR is a root-only folder the server's account cannot enter.
	const root = mkdtempSync(join(account === null ? (process.env.TMPDIR ?? "/tmp") : "/tmp", "scrapejob-pg-"));
	const data = join(root, "data");
	const pwfile = join(root, "pw");
	writeFileSync(pwfile, `${PASSWORD}\n`);
	if (account !== null) {
		chownSync(root, account.uid, account.gid);
		chownSync(pwfile, account.uid, account.gid);
	}
	chmodSync(root, 0o700);
	const remove = () => rmSync(root, { recursive: true, force: true });
	try {
		const [initdb, initArgs] = asAccount(account, join(bin, "initdb"), [
			"-D",
			data,
			"-U",
			USER,
			`--pwfile=${pwfile}`,
			"--auth=scram-sha-256",
			"--no-sync",
			"--encoding=UTF8",
			"--locale=C",
		]);
		execFileSync(initdb, initArgs, { stdio: "pipe" });
	} catch (error) {
		remove();
		const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
		throw new Error(`initdb failed: ${stderr || (error as Error).message}`);
	}
	const spawnServer = async (port: number): Promise<Server | string> => {
		const [postgres, args] = asAccount(account, join(bin, "postgres"), [
			"-D",
			data,
			"-h",
			"127.0.0.1",
			"-p",
			String(port),
			"-k",
			"",
			"-c",
			"fsync=off",
			"-c",
			"synchronous_commit=off",
			"-c",
			"full_page_writes=off",
			"-c",
			"max_connections=200",
			"-c",
			"shared_buffers=64MB",
		]);
		const server = spawn(postgres, args, { stdio: ["ignore", "ignore", "pipe"] });
		let log = "";
		server.stderr?.on("data", (chunk: Buffer) => {
			log = (log + chunk.toString()).slice(-4000);
		});
		const ready = await waitReady(server, port, () => log);
		if (ready === true) return { process: server, pid: postmasterPid(data) ?? server.pid! };
		server.kill("SIGKILL");
		return ready;
	};
	let lastError = "";
	for (let attempt = 0; attempt < 3; attempt++) {
		const port = await freePort();
		const server = await spawnServer(port);
		if (typeof server !== "string") return clusterHandle(server, port, spawnServer, remove);
		lastError = server;
	}
	remove();
	throw new Error(`PostgreSQL did not start: ${lastError}`);
}

/** True once the server accepts connections; the reason otherwise. */
async function waitReady(server: ChildProcess, port: number, log: () => string): Promise<true | string> {
	const deadline = Date.now() + 20_000;
	while (Date.now() < deadline) {
		if (server.exitCode !== null || server.signalCode !== null) return `the server exited: ${log().trim()}`;
		const client = new pg.Client({ host: "127.0.0.1", port, user: USER, password: PASSWORD, database: "postgres" });
		try {
			await client.connect();
			await client.end();
			return true;
		} catch {
			await client.end().catch(() => undefined);
			await new Promise((resolve) => setTimeout(resolve, 100));
		}
	}
	return `not ready after 20 s: ${log().trim()}`;
}

/** The server's own pid (under `runuser` the child is runuser, which need not pass signals on). */
function postmasterPid(data: string): number | null {
	try {
		const pid = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
		return Number.isInteger(pid) && pid > 0 ? pid : null;
	} catch {
		return null;
	}
}

/** A running server: the spawned process (maybe `runuser`) and the postmaster's own pid. */
interface Server {
	readonly process: ChildProcess;
	readonly pid: number;
}

function clusterHandle(
	first: Server,
	port: number,
	spawnServer: (port: number) => Promise<Server | string>,
	remove: () => void,
): TestCluster {
	let databases = 0;
	let server: Server | null = first;
	const signal = (name: NodeJS.Signals) => {
		if (server === null) return;
		try {
			process.kill(server.pid, name);
		} catch {
			// Already gone.
		}
	};
	/** The server shut down with `how` (SIGINT: fast, SIGQUIT: immediate), SIGKILL past 5 s. */
	const shutDown = async (how: NodeJS.Signals) => {
		if (server === null) return;
		const child = server.process;
		const exited = new Promise<void>((resolve) => {
			if (child.exitCode !== null || child.signalCode !== null) resolve();
			else child.once("exit", () => resolve());
		});
		signal(how);
		const timer = setTimeout(() => signal("SIGKILL"), 5_000);
		await exited;
		clearTimeout(timer);
		server = null;
	};
	// A test process that dies without its afterAll leaves no server behind.
	const onExit = () => {
		signal("SIGKILL");
		remove();
	};
	process.once("exit", onExit);
	let admin: pg.Client | null = null;
	const adminClient = async () => {
		if (admin === null) {
			admin = new pg.Client({ host: "127.0.0.1", port, user: USER, password: PASSWORD, database: "postgres" });
			admin.on("error", () => undefined);
			await admin.connect();
		}
		return admin;
	};
	const closeAdmin = async () => {
		await admin?.end().catch(() => undefined);
		admin = null;
	};
	return {
		host: "127.0.0.1",
		port,
		user: USER,
		password: PASSWORD,
		async createDatabase() {
			const name = `t${process.pid}_${++databases}`;
			await (await adminClient()).query(`CREATE DATABASE ${name}`);
			return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${name}`;
		},
		async down() {
			await closeAdmin();
			await shutDown("SIGINT");
		},
		async up() {
			if (server !== null) return;
			const started = await spawnServer(port);
			if (typeof started === "string") throw new Error(`PostgreSQL did not start again: ${started}`);
			server = started;
		},
		async stop() {
			await closeAdmin();
			// SIGQUIT: immediate shutdown, no checkpoint: the folder is removed next.
			await shutDown("SIGQUIT");
			process.off("exit", onExit);
			remove();
		},
	};
}

/** One statement on a database of the cluster, on a connection of its own (a test reading what workers wrote). */
export async function queryDatabase<Row>(url: string, text: string): Promise<Row[]> {
	const client = new pg.Client({ connectionString: url });
	await client.connect();
	try {
		return (await client.query(text)).rows as Row[];
	} finally {
		await client.end();
	}
}
