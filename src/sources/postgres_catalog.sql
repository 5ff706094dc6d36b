-- The catalog of the schemas $1 as one JSON document (src/core/normalize/postgres.rs).
-- Reads pg_catalog only, never row data; runs in a READ ONLY transaction with
-- search_path = pg_catalog. Objects that belong to extensions are left out.
WITH rels AS (
  SELECT c.oid, n.nspname, c.relname, c.relkind, c.relrowsecurity, c.relforcerowsecurity,
         c.relowner, c.relacl
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = ANY($1::text[]) AND c.relkind IN ('r', 'p', 'f', 'v', 'm')
     AND NOT EXISTS (SELECT 1 FROM pg_depend d
                      WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
),
procs AS (
  SELECT p.oid, n.nspname, p.proname, p.prokind, p.provolatile, p.prosecdef, p.proowner,
         p.proacl, p.prosrc, l.lanname
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    JOIN pg_language l ON l.oid = p.prolang
   WHERE n.nspname = ANY($1::text[]) AND p.prokind IN ('f', 'p')
     AND NOT EXISTS (SELECT 1 FROM pg_depend d
                      WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
)
SELECT json_build_object(
  'format', $2::text,
  'relations', coalesce((SELECT json_agg(json_build_object(
      'schema', r.nspname,
      'name', r.relname,
      'kind', r.relkind::text,
      'row_security', r.relrowsecurity,
      'force_row_security', r.relforcerowsecurity,
      'privileges', coalesce((SELECT json_agg(json_build_object(
           'grantee', CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee)::text END,
           'privilege', a.privilege_type))
         FROM aclexplode(r.relacl) a WHERE a.grantee <> r.relowner), '[]'::json),
      'definition', CASE WHEN r.relkind IN ('v', 'm') THEN pg_get_viewdef(r.oid) END,
      'columns', coalesce((SELECT json_agg(json_build_object(
           'name', a.attname::text,
           'type_name', format_type(a.atttypid, a.atttypmod),
           'not_null', a.attnotnull,
           'default', pg_get_expr(d.adbin, d.adrelid),
           'identity', a.attidentity::text,
           'generated', a.attgenerated::text,
           'enum_values', (SELECT json_agg(e.enumlabel::text ORDER BY e.enumsortorder)
                             FROM pg_enum e
                            WHERE e.enumtypid = CASE WHEN t.typcategory = 'A' THEN t.typelem
                                                     WHEN t.typtype = 'd' THEN t.typbasetype
                                                     ELSE t.oid END),
           'domain_base', CASE WHEN t.typtype = 'd' THEN format_type(t.typbasetype, t.typtypmod) END,
           'domain_not_null', t.typtype = 'd' AND t.typnotnull) ORDER BY a.attnum)
         FROM pg_attribute a
         JOIN pg_type t ON t.oid = a.atttypid
         LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped), '[]'::json),
      'constraints', coalesce((SELECT json_agg(json_build_object(
           'name', co.conname::text,
           'kind', co.contype::text,
           'definition', pg_get_constraintdef(co.oid),
           'columns', coalesce((SELECT json_agg(a.attname::text ORDER BY k.ord)
                                  FROM unnest(co.conkey) WITH ORDINALITY k(attnum, ord)
                                  JOIN pg_attribute a ON a.attrelid = co.conrelid AND a.attnum = k.attnum),
                               '[]'::json)) ORDER BY co.conname)
         FROM pg_constraint co
        WHERE co.conrelid = r.oid AND co.contype IN ('p', 'u', 'f', 'c', 'x')), '[]'::json),
      'indexes', coalesce((SELECT json_agg(json_build_object(
           'name', ic.relname::text,
           'definition', pg_get_indexdef(i.indexrelid)) ORDER BY ic.relname)
         FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
        WHERE i.indrelid = r.oid), '[]'::json),
      'triggers', coalesce((SELECT json_agg(json_build_object(
           'name', tg.tgname::text,
           'definition', pg_get_triggerdef(tg.oid)) ORDER BY tg.tgname)
         FROM pg_trigger tg WHERE tg.tgrelid = r.oid AND NOT tg.tgisinternal), '[]'::json),
      'policies', coalesce((SELECT json_agg(json_build_object(
           'name', po.polname::text,
           'command', po.polcmd::text,
           'permissive', po.polpermissive,
           'roles', (SELECT coalesce(json_agg(CASE WHEN ro = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(ro)::text END
                                              ), '[]'::json)
                       FROM unnest(po.polroles) ro),
           'using', pg_get_expr(po.polqual, po.polrelid),
           'with_check', pg_get_expr(po.polwithcheck, po.polrelid)) ORDER BY po.polname)
         FROM pg_policy po WHERE po.polrelid = r.oid), '[]'::json)
    ) ORDER BY r.nspname, r.relname) FROM rels r), '[]'::json),
  'functions', coalesce((SELECT json_agg(json_build_object(
      'schema', p.nspname,
      'name', p.proname::text,
      'kind', p.prokind::text,
      'arguments', pg_get_function_identity_arguments(p.oid),
      'result', pg_get_function_result(p.oid),
      'volatility', p.provolatile::text,
      'security_definer', p.prosecdef,
      'language', p.lanname::text,
      'body', p.prosrc,
      'privileges', coalesce((SELECT json_agg(json_build_object(
           'grantee', CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee)::text END,
           'privilege', a.privilege_type))
         FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
        WHERE a.grantee <> p.proowner), '[]'::json)
    ) ORDER BY p.nspname, p.proname, pg_get_function_identity_arguments(p.oid)) FROM procs p), '[]'::json)
)::text
