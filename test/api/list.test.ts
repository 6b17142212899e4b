import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../helpers/service.ts';
import type { PageMeta } from '../../src/api/pagination.ts';

const LISTER = 'key-lister-list-0123456789abcdef';
const OTHER = 'key-other-list-0123456789abcdef0';
const EMPTY = 'key-empty-list-0123456789abcdef0';

const COUNT = 23;
const LISTED_KEYS = ['completedAt', 'creditType', 'credits', 'id', 'input', 'output', 'refunded', 'startedAt', 'status', 'userId'];
const v4s = (n: number) => ({ workflow: 'generate_qr_art_v4s', qrText: `prompt ${n}`, qrContent: `https://example.com/${n}`, seed: n });

type Meta = PageMeta;

describe('listing predictions', () => {
  let stack: TestStack;
  /** The lister's prediction ids, oldest first. */
  const created: string[] = [];
  const records = new Map<string, Record<string, unknown>>();
  const otherIds: string[] = [];
  /** Newest first, as the list returns them. */
  const newestFirst = () => [...created].reverse();
  const list = (key: string, query = '') => stack.call('GET', `/v1/predictions${query}`, { key });

  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEYS: `lister:${LISTER}:100,other:${OTHER}:100,empty:${EMPTY}:0` } });
    // One after the other, so each has its own creation time.
    for (let n = 0; n < COUNT; n++) {
      const response = await stack.call('POST', '/v1/predictions/queue', { key: LISTER, body: v4s(n) });
      expect(response.status).toBe(200);
      created.push(response.body.data.id);
      records.set(response.body.data.id, response.body.data);
      if (n % 10 === 0) {
        const other = await stack.call('POST', '/v1/predictions/queue', { key: OTHER, body: v4s(100 + n) });
        expect(other.status).toBe(200);
        otherIds.push(other.body.data.id);
      }
    }
  });
  afterAll(async () => stack?.stop());

  it('defaults to limit 10, offset 0, newest first', async () => {
    const response = await list(LISTER);
    expect(response.status).toBe(200);
    expect(Object.keys(response.body)).toEqual(['data']);
    const { docs, ...meta } = response.body.data;
    expect(meta).toEqual({
      totalDocs: 23,
      offset: 0,
      limit: 10,
      totalPages: 3,
      page: 1,
      pagingCounter: 1,
      hasPrevPage: false,
      hasNextPage: true,
      prevPage: null,
      nextPage: 2,
    } satisfies Meta);
    expect(docs.map((doc: { id: string }) => doc.id)).toEqual(newestFirst().slice(0, 10));
  });

  it('lists items with exactly the fields of spec 2.3, matching the full record', async () => {
    const response = await list(LISTER, '?limit=100');
    expect(response.body.data.docs).toHaveLength(COUNT);
    for (const doc of response.body.data.docs) {
      expect(Object.keys(doc).sort()).toEqual(LISTED_KEYS);
      for (const absent of ['createdAt', 'updatedAt', 'error', 'isScanables']) expect(doc).not.toHaveProperty(absent);
      const { createdAt: _c, updatedAt: _u, error: _e, isScanables: _s, ...expected } = records.get(doc.id)!;
      expect(doc).toEqual(expected);
      expect(doc).toMatchObject({ userId: 'lister', status: 'queued', refunded: false, creditType: 'API_CREDITS', credits: 1, output: '', startedAt: null, completedAt: null });
    }
  });

  // [limit, offset, expected meta (without totalDocs/offset/limit), number of docs]
  const cases: [number, number, Omit<Meta, 'totalDocs' | 'offset' | 'limit'>, number][] = [
    [10, 0, { totalPages: 3, page: 1, pagingCounter: 1, hasPrevPage: false, hasNextPage: true, prevPage: null, nextPage: 2 }, 10],
    [10, 10, { totalPages: 3, page: 2, pagingCounter: 11, hasPrevPage: true, hasNextPage: true, prevPage: 1, nextPage: 3 }, 10],
    [10, 20, { totalPages: 3, page: 3, pagingCounter: 21, hasPrevPage: true, hasNextPage: false, prevPage: 2, nextPage: null }, 3],
    [10, 22, { totalPages: 3, page: 3, pagingCounter: 23, hasPrevPage: true, hasNextPage: false, prevPage: 2, nextPage: null }, 1],
    [10, 23, { totalPages: 3, page: 3, pagingCounter: 24, hasPrevPage: true, hasNextPage: false, prevPage: 2, nextPage: null }, 0],
    [10, 30, { totalPages: 3, page: 4, pagingCounter: 31, hasPrevPage: true, hasNextPage: false, prevPage: 3, nextPage: null }, 0],
    [5, 0, { totalPages: 5, page: 1, pagingCounter: 1, hasPrevPage: false, hasNextPage: true, prevPage: null, nextPage: 2 }, 5],
    [5, 15, { totalPages: 5, page: 4, pagingCounter: 16, hasPrevPage: true, hasNextPage: true, prevPage: 3, nextPage: 5 }, 5],
    [5, 20, { totalPages: 5, page: 5, pagingCounter: 21, hasPrevPage: true, hasNextPage: false, prevPage: 4, nextPage: null }, 3],
    // An offset that is not a multiple of limit: page is the one holding the first doc.
    [7, 3, { totalPages: 4, page: 1, pagingCounter: 4, hasPrevPage: true, hasNextPage: true, prevPage: 1, nextPage: 2 }, 7],
    [7, 16, { totalPages: 4, page: 3, pagingCounter: 17, hasPrevPage: true, hasNextPage: false, prevPage: 2, nextPage: null }, 7],
    [7, 17, { totalPages: 4, page: 3, pagingCounter: 18, hasPrevPage: true, hasNextPage: false, prevPage: 2, nextPage: null }, 6],
    [23, 0, { totalPages: 1, page: 1, pagingCounter: 1, hasPrevPage: false, hasNextPage: false, prevPage: null, nextPage: null }, 23],
    [22, 0, { totalPages: 2, page: 1, pagingCounter: 1, hasPrevPage: false, hasNextPage: true, prevPage: null, nextPage: 2 }, 22],
    [100, 0, { totalPages: 1, page: 1, pagingCounter: 1, hasPrevPage: false, hasNextPage: false, prevPage: null, nextPage: null }, 23],
    [1, 0, { totalPages: 23, page: 1, pagingCounter: 1, hasPrevPage: false, hasNextPage: true, prevPage: null, nextPage: 2 }, 1],
    [1, 22, { totalPages: 23, page: 23, pagingCounter: 23, hasPrevPage: true, hasNextPage: false, prevPage: 22, nextPage: null }, 1],
  ];

  it.each(cases)('limit=%i offset=%i gives the documented page arithmetic and the right slice', async (limit, offset, meta, count) => {
    const response = await list(LISTER, `?limit=${limit}&offset=${offset}`);
    expect(response.status).toBe(200);
    const { docs, ...got } = response.body.data;
    expect(got).toEqual({ totalDocs: COUNT, offset, limit, ...meta });
    expect(docs).toHaveLength(count);
    expect(docs.map((doc: { id: string }) => doc.id)).toEqual(newestFirst().slice(offset, offset + limit));
  });

  it('walks every prediction exactly once, newest first, by following nextPage', async () => {
    const seen: string[] = [];
    let offset = 0;
    for (let guard = 0; guard < 20; guard++) {
      const { docs, nextPage, hasNextPage, limit } = (await list(LISTER, `?limit=4&offset=${offset}`)).body.data;
      seen.push(...docs.map((doc: { id: string }) => doc.id));
      if (!hasNextPage) {
        expect(nextPage).toBeNull();
        break;
      }
      offset = (nextPage - 1) * limit;
    }
    expect(seen).toEqual(newestFirst());
  });

  it("does not list another user's predictions", async () => {
    const mine = (await list(LISTER, '?limit=100')).body.data.docs.map((doc: { id: string }) => doc.id);
    for (const id of otherIds) expect(mine).not.toContain(id);

    const theirs = await list(OTHER, '?limit=100');
    expect(theirs.body.data.totalDocs).toBe(otherIds.length);
    expect(theirs.body.data.docs.map((doc: { id: string }) => doc.id)).toEqual([...otherIds].reverse());
    expect(theirs.body.data.docs.every((doc: { userId: string }) => doc.userId === 'other')).toBe(true);
  });

  it('gives a user without predictions an empty first page', async () => {
    const response = await list(EMPTY);
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({
      docs: [],
      totalDocs: 0,
      offset: 0,
      limit: 10,
      totalPages: 1,
      page: 1,
      pagingCounter: 1,
      hasPrevPage: false,
      hasNextPage: false,
      prevPage: null,
      nextPage: null,
    });
  });

  it.each([
    ['limit=1', 1],
    ['limit=100', 100],
    ['limit=010', 10],
  ])('accepts %s', async (query, limit) => {
    const response = await list(LISTER, `?${query}`);
    expect(response.status).toBe(200);
    expect(response.body.data.limit).toBe(limit);
  });

  it.each([
    ['limit=0', 'limit', 'min'],
    ['limit=101', 'limit', 'max'],
    ['limit=-1', 'limit', 'min'],
    ['limit=1.5', 'limit', 'integer'],
    ['limit=abc', 'limit', 'integer'],
    ['limit=', 'limit', 'integer'],
    ['limit=1e1', 'limit', 'integer'],
    ['limit=%205', 'limit', 'integer'],
    ['limit=1&limit=2', 'limit', 'repeated'],
    ['offset=-1', 'offset', 'min'],
    ['offset=abc', 'offset', 'integer'],
    ['offset=2.5', 'offset', 'integer'],
    ['offset=99999999999999999999', 'offset', 'max'],
    ['page=0', 'page', 'min'],
    ['page=-2', 'page', 'min'],
    ['page=1.5', 'page', 'integer'],
    ['page=abc', 'page', 'integer'],
    ['page=1&page=2', 'page', 'repeated'],
    ['page=90071992547410', 'page', 'max'],
  ])('answers 400 invalid_request naming the field for %s', async (query, field, rule) => {
    const response = await list(LISTER, `?${query}`);
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ success: false, error: { code: 'invalid_request', message: expect.any(String), details: [expect.objectContaining({ field, rule })] } });
  });

  it('says a repeated parameter must be given once', async () => {
    const response = await list(LISTER, '?limit=5&limit=6');
    expect(response.body.error.details).toEqual([{ field: 'limit', rule: 'repeated', message: 'limit must be given once; got 2 values' }]);
  });

  it('names both fields when both are invalid', async () => {
    const response = await list(LISTER, '?limit=0&offset=-5');
    expect(response.status).toBe(400);
    expect(response.body.error.details.map((detail: { field: string }) => detail.field).sort()).toEqual(['limit', 'offset']);
  });

  it.each([
    [3, 2, 4],
    [1, 10, 0],
    [3, 10, 20],
    [4, 10, 30],
  ])('reads page=%i at limit=%i as offset %i, the page that nextPage names', async (page, limit, offset) => {
    const byPage = await list(LISTER, `?page=${page}&limit=${limit}`);
    expect(byPage.status).toBe(200);
    const byOffset = await list(LISTER, `?offset=${offset}&limit=${limit}`);
    expect(byPage.body).toEqual(byOffset.body);
    expect(byPage.body.data.page).toBe(page);
  });

  it('follows nextPage as ?page= through every prediction exactly once', async () => {
    const seen: string[] = [];
    let page: number | null = 1;
    for (let guard = 0; page !== null && guard < 20; guard++) {
      const data: { docs: { id: string }[]; nextPage: number | null } = (await list(LISTER, `?limit=4&page=${page}`)).body.data;
      seen.push(...data.docs.map((doc) => doc.id));
      page = data.nextPage;
    }
    expect(seen).toEqual(newestFirst());
  });

  it('answers 400 naming page when both page and offset are given', async () => {
    const response = await list(LISTER, '?page=2&offset=0');
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'page', rule: 'exclusive' })]);
  });

  it('ignores unknown query parameters', async () => {
    const response = await list(LISTER, '?sort=asc&cursor=abc&limit=2');
    expect(response.status).toBe(200);
    expect(response.body.data.docs.map((doc: { id: string }) => doc.id)).toEqual(newestFirst().slice(0, 2));
  });
});
