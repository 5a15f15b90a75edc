import { createHash } from "node:crypto";

/** Ids in the shape the job loader derives (16 hex digits), cheap to make in bulk. */
export function targetIdForTest(index: number): string {
	return createHash("sha256").update(`target-${index}`).digest("hex").slice(0, 16);
}
