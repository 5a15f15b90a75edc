import pg from "pg";
import { expect, it } from "vitest";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();

it("the test cluster starts, gives each test its own database, and asks for the password", async () => {
	const server = await cluster();
	const first = await server.createDatabase();
	const second = await server.createDatabase();
	expect(first).not.toBe(second);
	const client = new pg.Client({ connectionString: first });
	await client.connect();
	const { rows } = await client.query("SHOW fsync");
	await client.end();
	expect(rows[0].fsync).toBe("off");
	const wrong = new pg.Client({ connectionString: first.replace(server.password, "not-the-password") });
	await expect(wrong.connect()).rejects.toThrow(/password authentication failed/);
});
