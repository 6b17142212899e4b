/**
 * The OpenAPI document's schemas under ajv's JSON Schema 2020-12 validator (the dialect OpenAPI
 * 3.1 schemas use): for checking the document's own examples and the service's real responses.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';

type Json = Record<string, any>;

/** Where the document's components are reachable once registered: `${DOC_ID}#/$defs/Name`. */
export const DOC_ID = 'urn:qr-art:openapi';

/**
 * ajv for OpenAPI 3.1 schemas: strict (a misspelt keyword is an error), with OpenAPI's own
 * schema keywords declared, and the document's components reachable at DOC_ID.
 */
export function schemaValidator(doc: Json): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true, validateFormats: false });
  ajv.addVocabulary(['example', 'discriminator', 'xml', 'externalDocs']);
  // Each zod-generated component names its dialect at its top; inside a bundle that is the bundle's.
  const schemas = Object.fromEntries(Object.entries<Json>(doc.components.schemas).map(([name, { $schema: _dialect, ...schema }]) => [name, schema]));
  ajv.addSchema({ $id: DOC_ID, $defs: rewriteRefs(schemas) });
  return ajv;
}

/** A schema of the document with its `#/components/schemas/…` references pointed at DOC_ID. */
export function rewriteRefs(node: unknown): any {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [key, key === '$ref' && typeof value === 'string' ? value.replace('#/components/schemas/', `${DOC_ID}#/$defs/`) : rewriteRefs(value)]),
  );
}
