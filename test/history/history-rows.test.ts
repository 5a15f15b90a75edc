import { describe, expect, it } from "vitest";
import { HistoryRows, idKey, sortedOrder } from "../../src/history/history-rows.js";

describe("history rows", () => {
	it("sorts a chunk by the full 64-bit key, ties in the order recorded, also where keys share their high 48 bits", () => {
		// Derived ids are their own keys: these share the high word and the top 16 bits of the low one.
		const ids = [
			"00000007000100ff",
			"0000000700010003",
			"ffffffff00000000",
			"00000007000100ff",
			"0000000700010001",
			"0000000800000000",
			"0000000700020000",
			"0000000700010003",
		];
		const rows = new HistoryRows(ids.length);
		ids.forEach((id, row) => {
			rows.setRecord(row, id, "ok", row, null, 0, row);
		});
		const order = Array.from(sortedOrder(rows, ids.length));
		const expected = ids
			.map((id, row) => ({ key: idKey(id), row }))
			.sort((a, b) => a.key[0] - b.key[0] || a.key[1] - b.key[1] || a.row - b.row)
			.map(({ row }) => row);
		expect(order).toEqual(expected);
		expect(order).toEqual([4, 1, 7, 0, 3, 6, 5, 2]);
	});

	it("keeps the key's words unsigned: a high word past 2^31 sorts after the others", () => {
		const rows = new HistoryRows(3);
		rows.setRecord(0, "8000000000000000", "failed", 0, null, 0, 0);
		rows.setRecord(1, "7fffffffffffffff", "failed", 0, null, 0, 0);
		rows.setRecord(2, "0000000100000000", "failed", 0, null, 0, 0);
		expect(Array.from(sortedOrder(rows, 3))).toEqual([2, 1, 0]);
	});
});
