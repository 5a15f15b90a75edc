import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/common/index.js";
import { connectFleet, FleetDatabaseError } from "../../src/fleet/index.js";
import { fleetFor } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();

/** Everything an error shows anywhere: message, stack, its own fields, its causes. */
function everythingShown(error: unknown): string {
	const parts: string[] = [];
	let current: unknown = error;
	for (let depth = 0; current && depth < 5; depth++) {
		parts.push(String(current), (current as Error).stack ?? "", JSON.stringify(current) ?? "");
		current = (current as Error).cause;
	}
	return parts.join("\n");
}

async function failureOf(promise: Promise<unknown>): Promise<FleetDatabaseError> {
	const error = await promise.then(
		() => null,
		(caught: unknown) => caught,
	);
	expect(error).toBeInstanceOf(FleetDatabaseError);
	return error as FleetDatabaseError;
}

describe("the fleet URL's password", () => {
	it("never appears in an error: wrong password, nothing listening, a bad URL, a failed statement", async () => {
		const server = await cluster();
		const url = await server.createDatabase();
		const secret = "Sup3r-s3cret:pa/ss@word";
		const encoded = encodeURIComponent(secret);
		const base = `127.0.0.1:${server.port}/${url.split("/").pop()}`;
		const cases = [
			// Refused by the server.
			`postgres://${server.user}:${encoded}@${base}`,
			// Nothing listens there (port 1).
			`postgres://${server.user}:${encoded}@127.0.0.1:1/db`,
			// The password as a parameter.
			`postgresql://${server.user}@${base}?password=${encoded}`,
		];
		for (const given of cases) {
			const error = await failureOf(connectFleet({ url: given }));
			const shown = everythingShown(error);
			for (const form of [secret, encoded, given]) expect(shown, given).not.toContain(form);
			expect(error.code).toBe("SCRAPEJOB_FLEET_DATABASE");
		}
		// Not a URL pg can read: the command's mistake (exit 2, as a URL without postgres://), not an outage
		// to retry (exit 3), and still without the password.
		for (const given of [
			`postgres://${server.user}:${encoded}@[::1/db`,
			`postgres://${server.user}:${secret.replace("/", "#")}@${base}`,
			`postgres://${server.user}:${encoded}@127.0.0.1:99999/db`,
		]) {
			const error = await connectFleet({ url: given }).then(
				() => null,
				(caught: unknown) => caught,
			);
			expect(error, given).toBeInstanceOf(UsageError);
			expect((error as UsageError).code).toBe("SCRAPEJOB_USAGE");
			expect((error as Error).message).toContain("not a valid URL");
			for (const form of [secret, encoded, given, "pa#ss"]) expect(everythingShown(error), given).not.toContain(form);
		}
		const refused = await failureOf(connectFleet({ url: cases[0]! }));
		expect(refused.sqlState).toBe("28P01");
		expect(refused.message).toContain(`postgres://***@${base}`);
		// A statement that fails once connected says so without the URL's secret.
		const fleet = await fleetFor(url);
		const failed = await failureOf(fleet.query("SELECT * FROM no_such_table"));
		expect(failed.sqlState).toBe("42P01");
		expect(everythingShown(failed)).not.toContain(server.password);
	});
});
