// TypeORM (postgres) in the same Jest setup: after `initialize()`, `instrument(dataSource)` times
// the pg Pool TypeORM made, so a repository's queries sit under the step that ran them.
const { DataSource, EntitySchema } = require('typeorm');
const { instrument, step, withProfile } = require('miniprof');

const Tag = new EntitySchema({
  name: 'Tag',
  tableName: 'typeorm_tags',
  columns: { id: { type: Number, primary: true, generated: true }, name: { type: String } },
});
const dataSource = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, entities: [Tag], synchronize: true, logging: false });

test('before initialize(): a TypeError that says to call it after initialize()', () => {
  expect(() => instrument(dataSource)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_ARGUMENT', message: expect.stringContaining('not initialized yet') }));
});

test('after initialize(): a repository\'s queries under the step that ran them', async () => {
  await dataSource.initialize();
  try {
    expect(instrument(dataSource)).toBe(dataSource);
    const repo = dataSource.getRepository('Tag');
    const { profile } = await withProfile('job', async () => {
      await step('save tag', () => repo.save({ name: 'node' }));
      await step('load tags', () => repo.find({ where: { name: 'node' } }));
    });
    const steps = profile.toJSON().root.children.map((t) => [t.name, (t.custom || []).map((c) => c.category)]);
    expect(steps[1]).toEqual(['load tags', ['sql']]);
    expect(profile.toJSON().root.children[1].custom[0].command).toMatch(/^SELECT .* FROM "typeorm_tags" "Tag" WHERE/);
    // A save runs in a transaction: its queries are all under the save step.
    expect(steps[0][0]).toBe('save tag');
    expect(steps[0][1].length).toBeGreaterThanOrEqual(1);
  } finally {
    await dataSource.destroy();
  }
});
