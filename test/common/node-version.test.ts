import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { MIN_NODE_VERSION, nodeTooOld } from "../../src/common/index.js";

it("a Node older than package.json's engines is refused in words that say how to get Node 24; 22.12 and later are not", () => {
	const engines = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).engines.node;
	expect(engines).toBe(`>=${MIN_NODE_VERSION}`);
	const refused = nodeTooOld("v20.20.2");
	expect(refused).toContain("scrapejob needs Node 22.12.0 or later (Node 24 recommended); this is Node v20.20.2");
	expect(refused).toContain("npm install --prefix ~/.local/node24 node@24");
	expect(nodeTooOld("v18.19.0")).not.toBeNull();
	expect(nodeTooOld("v22.11.9")).not.toBeNull();
	expect(nodeTooOld("v22.0.0")).not.toBeNull();
	expect(nodeTooOld("v22.12.0")).toBeNull();
	expect(nodeTooOld("v22.21.1")).toBeNull();
	expect(nodeTooOld("v23.0.0")).toBeNull();
	expect(nodeTooOld("v24.21.0")).toBeNull();
	expect(nodeTooOld(process.version)).toBeNull();
});
