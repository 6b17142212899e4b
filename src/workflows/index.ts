/** Workflow catalogue and create-body validation of the prediction API. */
export * from './names.ts';
export * from './sizes.ts';
export * from './presets.ts';
export * from './catalogue.ts';
export * from './pricing.ts';
export { requestSchemas, createBodySchema, schemaSetFor, fitsInQrCode, type SchemaOptions, type FieldKind } from './schemas.ts';
export * from './validate.ts';
export { isNonPublicLiteralHost, checkUrl } from './urls.ts';
