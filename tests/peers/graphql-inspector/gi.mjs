// Runs graphql-inspector's diff engine (@graphql-inspector/core, what `graphql-inspector diff`
// calls) on two SDL files and prints one JSON object: counts by criticality and by change type,
// and every change as {criticality, type, path}. Usage: node gi.mjs OLD.graphql NEW.graphql [OLD2 NEW2 ...]
import { readFileSync } from "node:fs";
import { buildSchema } from "graphql";
import { diff } from "@graphql-inspector/core";

// assumeValidSDL: GitHub's published SDL defines one field twice; graphql-js then keeps the
// last definition, as schemawatch does.
const load = (p) => buildSchema(readFileSync(p, "utf8"), { assumeValidSDL: true });
// More than one pair (OLD1 NEW1 OLD2 NEW2 ...): one JSON line per pair, in order, so a test
// comparing many generated pairs starts node once.
const paths = process.argv.slice(2);
for (let i = 0; i + 1 < paths.length; i += 2) {
  const changes = await diff(load(paths[i]), load(paths[i + 1]));
  const byLevel = {};
  const byType = {};
  for (const c of changes) {
    byLevel[c.criticality.level] = (byLevel[c.criticality.level] ?? 0) + 1;
    byType[c.type] = (byType[c.type] ?? 0) + 1;
  }
  const sorted = changes
    .map((c) => ({ criticality: c.criticality.level, type: c.type, path: c.path ?? null }))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  process.stdout.write(
    JSON.stringify({ total: changes.length, by_level: byLevel, by_type: byType, changes: sorted }) + "\n",
  );
}
