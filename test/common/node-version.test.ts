import { expect, it } from "vitest";
import { MIN_NODE_MAJOR, nodeTooOld } from "../../src/common/index.js";

it("a Node older than 22 is refused in words that say how to get Node 24; 22 and 24 are not", () => {
	expect(MIN_NODE_MAJOR).toBe(22);
	const refused = nodeTooOld("v20.20.2");
	expect(refused).toContain("scrapejob needs Node 22 or later (Node 24 recommended); this is Node v20.20.2");
	expect(refused).toContain("npm install --prefix ~/.local/node24 node@24");
	expect(nodeTooOld("v18.19.0")).not.toBeNull();
	expect(nodeTooOld("v22.12.0")).toBeNull();
	expect(nodeTooOld("v24.21.0")).toBeNull();
	expect(nodeTooOld(process.version)).toBeNull();
});
