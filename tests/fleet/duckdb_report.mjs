// SPDX-License-Identifier: MIT
// Runs the SQL of docs/fleet.md on DuckDB (@duckdb/node-api) for fleet.duckdb (check_duckdb.py):
//   node duckdb_report.mjs FLEET_MD LOGS_DIR BY...
// The three ```sql blocks of FLEET_MD, in order: the blocks (with 'logs/*.jsonl' replaced by
// LOGS_DIR/*.jsonl), the grouping (its key column replaced by each BY in turn), the report.
// Prints one JSON object: {"<by>": [rows...], ...} and the seconds the statements took.
import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';

const [markdown, logs, ...bys] = process.argv.slice(2);
const blocks = [...readFileSync(markdown, 'utf8').matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]);
if (blocks.length !== 3) throw new Error(`${markdown}: ${blocks.length} sql blocks, expected 3`);
const [load, grouping, report] = blocks;
if (!load.includes("'logs/*.jsonl'") || !grouping.includes('culprit AS key')) {
  throw new Error(`${markdown}: the sql blocks no longer read 'logs/*.jsonl' or group by "culprit AS key"`);
}
const instance = await DuckDBInstance.create(':memory:');
const connection = await instance.connect();
const out = { seconds: {} };
let start = performance.now();
await connection.run(load.replaceAll("'logs/*.jsonl'", `'${logs.replaceAll("'", "''")}/*.jsonl'`));
out.seconds.load = (performance.now() - start) / 1000;
for (const by of bys) {
  start = performance.now();
  await connection.run(grouping.replace('culprit AS key', `${by} AS key`));
  const result = await connection.runAndReadAll(report);
  out.seconds[by] = (performance.now() - start) / 1000;
  out[by] = result.getRowObjectsJson();
}
console.log(JSON.stringify(out));
