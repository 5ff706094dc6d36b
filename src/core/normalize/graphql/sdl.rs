//! SDL → [`Schema`] through apollo-parser's lossless CST, with its recursion and token limits
//! set for untrusted input. Any syntax error (a limit reached included) rejects the document.

use super::literal::{decode_string_token, parse_value};
use super::{
    invalid, Applied, Deprecation, DirectiveDef, EnumValue, Field, InputValue, Schema, TypeDef,
    TypeKind, TypeRef, BUILTIN_DIRECTIVES, DEFAULT_DEPRECATION_REASON,
};
use crate::core::normalize::NormalizeError;
use apollo_parser::cst::{self, CstNode};
use apollo_parser::Parser;

/// Deepest nesting the parser follows (type wrappers, value literals, selections).
pub const MAX_SDL_RECURSION: usize = 128;
/// Most lexer tokens in one document (GitHub's 1.2 MB schema is about 140 000,
/// whitespace included).
pub const MAX_SDL_TOKENS: usize = 2_000_000;

pub(super) fn read(text: &str, recursion: usize, tokens: usize) -> Result<Schema, NormalizeError> {
    let tree = Parser::new(text)
        .recursion_limit(recursion)
        .token_limit(tokens)
        .parse();
    if let Some(error) = tree.errors().next() {
        let what = if error.is_limit() {
            "parser limit reached"
        } else {
            "syntax error"
        };
        // The message is apollo-parser's fixed text; the data (document text) is left out.
        return Err(invalid(
            format!("byte {}", error.index()),
            format!("{what}: {}", error.message()),
        ));
    }
    let doc = tree.document();
    let mut schema = Schema::default();
    let mut roots: Option<Vec<(String, String)>> = None;
    let mut extensions = Vec::new();
    for def in doc.definitions() {
        match def {
            cst::Definition::OperationDefinition(_) | cst::Definition::FragmentDefinition(_) => {
                return Err(invalid(
                    "document",
                    "an executable document (operation or fragment), not a schema",
                ))
            }
            cst::Definition::DirectiveDefinition(d) => {
                let name = name_of(d.name(), "directive")?;
                if BUILTIN_DIRECTIVES.contains(&name.as_str()) {
                    continue;
                }
                let at = format!("@{name}");
                let def = DirectiveDef {
                    description: description(d.description())?,
                    args: input_values(
                        &at,
                        d.arguments_definition()
                            .map(|a| a.input_value_definitions()),
                    )?,
                    locations: d
                        .directive_locations()
                        .into_iter()
                        .flat_map(|l| l.directive_locations())
                        .map(|l| l.syntax().text().to_string().trim().to_string())
                        .collect(),
                    repeatable: d.repeatable_token().is_some(),
                };
                if schema.directives.insert(name, def).is_some() {
                    return Err(invalid(&at, "directive defined twice"));
                }
            }
            cst::Definition::SchemaDefinition(s) => {
                if roots.is_some() {
                    return Err(invalid("schema", "more than one schema definition"));
                }
                roots = Some(root_operations(s.root_operation_type_definitions())?);
                schema.description = description(s.description())?;
                schema
                    .schema_directives
                    .extend(applied(s.directives(), "schema", &[])?);
            }
            cst::Definition::ScalarTypeDefinition(t) => {
                let name = name_of(t.name(), "scalar")?;
                let mut def = TypeDef::new(TypeKind::Scalar, description(t.description())?);
                def.specified_by = specified_by(t.directives(), &name)?;
                def.directives = applied(t.directives(), &name, &["specifiedBy"])?;
                insert(&mut schema, name, def)?;
            }
            cst::Definition::ObjectTypeDefinition(t) => {
                let name = name_of(t.name(), "type")?;
                let mut def = TypeDef::new(TypeKind::Object, description(t.description())?);
                def.interfaces = implements(t.implements_interfaces())?;
                def.fields = fields(&name, t.fields_definition())?;
                def.directives = applied(t.directives(), &name, &[])?;
                insert(&mut schema, name, def)?;
            }
            cst::Definition::InterfaceTypeDefinition(t) => {
                let name = name_of(t.name(), "interface")?;
                let mut def = TypeDef::new(TypeKind::Interface, description(t.description())?);
                def.fields = fields(&name, t.fields_definition())?;
                def.directives = applied(t.directives(), &name, &[])?;
                insert(&mut schema, name, def)?;
            }
            cst::Definition::UnionTypeDefinition(t) => {
                let name = name_of(t.name(), "union")?;
                let mut def = TypeDef::new(TypeKind::Union, description(t.description())?);
                def.members = members(t.union_member_types())?;
                def.directives = applied(t.directives(), &name, &[])?;
                insert(&mut schema, name, def)?;
            }
            cst::Definition::EnumTypeDefinition(t) => {
                let name = name_of(t.name(), "enum")?;
                let mut def = TypeDef::new(TypeKind::Enum, description(t.description())?);
                def.values = enum_values(t.enum_values_definition())?;
                def.directives = applied(t.directives(), &name, &[])?;
                insert(&mut schema, name, def)?;
            }
            cst::Definition::InputObjectTypeDefinition(t) => {
                let name = name_of(t.name(), "input")?;
                let mut def = TypeDef::new(TypeKind::InputObject, description(t.description())?);
                def.one_of = has_directive(t.directives(), "oneOf");
                def.directives = applied(t.directives(), &name, &["oneOf"])?;
                def.input_fields = input_values(
                    &name,
                    t.input_fields_definition()
                        .map(|d| d.input_value_definitions()),
                )?;
                insert(&mut schema, name, def)?;
            }
            other => extensions.push(other),
        }
    }
    for ext in extensions {
        apply_extension(&mut schema, &mut roots, ext)?;
    }
    let named = |s: &Schema, n: &str| s.types.contains_key(n).then(|| n.to_string());
    match roots {
        Some(roots) => {
            for (operation, ty) in roots {
                let slot = match operation.as_str() {
                    "query" => &mut schema.query,
                    "mutation" => &mut schema.mutation,
                    _ => &mut schema.subscription,
                };
                if slot.replace(ty).is_some() {
                    return Err(invalid("schema", format!("{operation} root given twice")));
                }
            }
        }
        None => {
            schema.query = named(&schema, "Query");
            schema.mutation = named(&schema, "Mutation");
            schema.subscription = named(&schema, "Subscription");
        }
    }
    Ok(schema)
}

fn apply_extension(
    schema: &mut Schema,
    roots: &mut Option<Vec<(String, String)>>,
    ext: cst::Definition,
) -> Result<(), NormalizeError> {
    let (name, kind) = match &ext {
        cst::Definition::SchemaExtension(s) => {
            // `extend schema @link(...)` names no operation types: as in graphql-js, the
            // default root names still apply.
            let extra = root_operations(s.root_operation_type_definitions())?;
            if !extra.is_empty() {
                roots.get_or_insert_with(Vec::new).extend(extra);
            }
            schema
                .schema_directives
                .extend(applied(s.directives(), "extend schema", &[])?);
            return Ok(());
        }
        cst::Definition::ScalarTypeExtension(t) => {
            let name = name_of(t.name(), "extend scalar")?;
            let def = schema
                .types
                .get_mut(&name)
                .filter(|d| d.kind == TypeKind::Scalar)
                .ok_or_else(|| invalid(&name, "extension of a scalar that is not defined"))?;
            if let Some(url) = specified_by(t.directives(), &name)? {
                def.specified_by = Some(url);
            }
            def.directives
                .extend(applied(t.directives(), &name, &["specifiedBy"])?);
            return Ok(());
        }
        cst::Definition::ObjectTypeExtension(t) => {
            (name_of(t.name(), "extend type")?, TypeKind::Object)
        }
        cst::Definition::InterfaceTypeExtension(t) => {
            (name_of(t.name(), "extend interface")?, TypeKind::Interface)
        }
        cst::Definition::UnionTypeExtension(t) => {
            (name_of(t.name(), "extend union")?, TypeKind::Union)
        }
        cst::Definition::EnumTypeExtension(t) => {
            (name_of(t.name(), "extend enum")?, TypeKind::Enum)
        }
        cst::Definition::InputObjectTypeExtension(t) => {
            (name_of(t.name(), "extend input")?, TypeKind::InputObject)
        }
        _ => return Ok(()),
    };
    let def = schema
        .types
        .get_mut(&name)
        .filter(|d| d.kind == kind)
        .ok_or_else(|| {
            invalid(
                &name,
                "extension of a type that is not defined with that kind",
            )
        })?;
    match ext {
        cst::Definition::ObjectTypeExtension(t) => {
            def.interfaces
                .extend(implements(t.implements_interfaces())?);
            def.fields.extend(fields(&name, t.fields_definition())?);
            def.directives.extend(applied(t.directives(), &name, &[])?);
        }
        cst::Definition::InterfaceTypeExtension(t) => {
            def.fields.extend(fields(&name, t.fields_definition())?);
            def.directives.extend(applied(t.directives(), &name, &[])?);
        }
        cst::Definition::UnionTypeExtension(t) => {
            def.members.extend(members(t.union_member_types())?);
            def.directives.extend(applied(t.directives(), &name, &[])?);
        }
        cst::Definition::EnumTypeExtension(t) => {
            def.values.extend(enum_values(t.enum_values_definition())?);
            def.directives.extend(applied(t.directives(), &name, &[])?);
        }
        cst::Definition::InputObjectTypeExtension(t) => {
            def.input_fields.extend(input_values(
                &name,
                t.input_fields_definition()
                    .map(|d| d.input_value_definitions()),
            )?);
            def.one_of |= has_directive(t.directives(), "oneOf");
            def.directives
                .extend(applied(t.directives(), &name, &["oneOf"])?);
        }
        _ => {}
    }
    dedupe(def);
    Ok(())
}

/// Keeps the last of several members with one name, as graphql-js does when it builds a schema
/// from SDL without validating it (GitHub's published SDL has such a duplicate field).
fn last_wins<T>(items: &mut Vec<T>, name: impl Fn(&T) -> &str) {
    let mut seen = std::collections::BTreeSet::new();
    let mut kept: Vec<T> = Vec::with_capacity(items.len());
    for item in items.drain(..).rev() {
        if seen.insert(name(&item).to_string()) {
            kept.push(item);
        }
    }
    kept.reverse();
    *items = kept;
}

fn dedupe(def: &mut TypeDef) {
    last_wins(&mut def.fields, |f| &f.name);
    last_wins(&mut def.input_fields, |f| &f.name);
    last_wins(&mut def.values, |f| &f.name);
    last_wins(&mut def.interfaces, |f| f);
    last_wins(&mut def.members, |f| f);
}

fn insert(schema: &mut Schema, name: String, def: TypeDef) -> Result<(), NormalizeError> {
    if name.starts_with("__") {
        return Err(invalid(&name, "names starting with __ are reserved"));
    }
    let mut def = def;
    dedupe(&mut def);
    if schema.types.insert(name.clone(), def).is_some() {
        return Err(invalid(&name, "type defined twice"));
    }
    Ok(())
}

fn root_operations(
    defs: cst::CstChildren<cst::RootOperationTypeDefinition>,
) -> Result<Vec<(String, String)>, NormalizeError> {
    let mut out = Vec::new();
    for d in defs {
        let op = d
            .operation_type()
            .ok_or_else(|| invalid("schema", "root operation without a type"))?;
        let operation = if op.query_token().is_some() {
            "query"
        } else if op.mutation_token().is_some() {
            "mutation"
        } else {
            "subscription"
        };
        let ty = name_of(d.named_type().and_then(|n| n.name()), "schema")?;
        out.push((operation.to_string(), ty));
    }
    Ok(out)
}

fn name_of(name: Option<cst::Name>, at: &str) -> Result<String, NormalizeError> {
    name.map(|n| n.text().to_string())
        .ok_or_else(|| invalid(at, "missing name"))
}

fn description(d: Option<cst::Description>) -> Result<Option<String>, NormalizeError> {
    let Some(s) = d.and_then(|d| d.string_value()) else {
        return Ok(None);
    };
    decode_string_token(&s.syntax().text().to_string())
        .map(Some)
        .map_err(|e| invalid("description", e))
}

fn implements(i: Option<cst::ImplementsInterfaces>) -> Result<Vec<String>, NormalizeError> {
    i.map(|i| {
        i.named_types()
            .map(|n| name_of(n.name(), "implements"))
            .collect()
    })
    .unwrap_or_else(|| Ok(Vec::new()))
}

fn members(m: Option<cst::UnionMemberTypes>) -> Result<Vec<String>, NormalizeError> {
    m.map(|m| {
        m.named_types()
            .map(|n| name_of(n.name(), "union"))
            .collect()
    })
    .unwrap_or_else(|| Ok(Vec::new()))
}

fn type_ref(ty: Option<cst::Type>, at: &str) -> Result<TypeRef, NormalizeError> {
    match ty.ok_or_else(|| invalid(at, "missing type"))? {
        cst::Type::NamedType(n) => Ok(TypeRef::Named(name_of(n.name(), at)?)),
        cst::Type::ListType(l) => Ok(TypeRef::List(Box::new(type_ref(l.ty(), at)?))),
        cst::Type::NonNullType(n) => {
            let inner = if let Some(named) = n.named_type() {
                TypeRef::Named(name_of(named.name(), at)?)
            } else if let Some(list) = n.list_type() {
                TypeRef::List(Box::new(type_ref(list.ty(), at)?))
            } else {
                return Err(invalid(at, "empty non-null type"));
            };
            Ok(TypeRef::NonNull(Box::new(inner)))
        }
    }
}

/// Whether `name` is among the directives.
fn has_directive(d: Option<cst::Directives>, name: &str) -> bool {
    d.is_some_and(|d| {
        d.directives()
            .any(|x| x.name().is_some_and(|n| n.text() == name))
    })
}

/// The arguments of one applied directive, decoded like default values.
fn directive_args(
    directive: &cst::Directive,
    at: &str,
) -> Result<std::collections::BTreeMap<String, serde_json::Value>, NormalizeError> {
    let mut args = std::collections::BTreeMap::new();
    for arg in directive
        .arguments()
        .into_iter()
        .flat_map(|a| a.arguments())
    {
        let name = name_of(arg.name(), at)?;
        let text = arg.value().map(|v| v.syntax().text().to_string());
        let value = parse_value(text.as_deref().unwrap_or(""))
            .map_err(|e| invalid(at, format!("argument {name} of a directive: {e}")))?;
        args.insert(name, value);
    }
    Ok(args)
}

/// The directives applied, but the ones the model reads itself at this position (`read`:
/// `@deprecated` on fields, arguments, input fields and enum values, `@oneOf` on input
/// objects, `@specifiedBy` on scalars). Every other usage is kept, a built-in's too (issue 30:
/// `@oneOf` on a field or a union was dropped, so adding it read as identical).
fn applied(
    d: Option<cst::Directives>,
    at: &str,
    read: &[&str],
) -> Result<Vec<Applied>, NormalizeError> {
    let mut out = Vec::new();
    for directive in d.into_iter().flat_map(|d| d.directives()) {
        let name = name_of(directive.name(), at)?;
        if read.contains(&name.as_str()) {
            continue;
        }
        out.push(Applied {
            args: directive_args(&directive, &format!("{at}.@{name}"))?,
            name,
        });
    }
    Ok(out)
}

/// `@specifiedBy(url: ...)` of a scalar, if present.
fn specified_by(d: Option<cst::Directives>, at: &str) -> Result<Option<String>, NormalizeError> {
    for directive in d.into_iter().flat_map(|d| d.directives()) {
        if directive.name().is_some_and(|n| n.text() == "specifiedBy") {
            let args = directive_args(&directive, at)?;
            return match args.get("url") {
                Some(serde_json::Value::String(url)) => Ok(Some(url.clone())),
                _ => Err(invalid(at, "@specifiedBy needs a string url")),
            };
        }
    }
    Ok(None)
}

/// `@deprecated(reason: ...)` among the directives, if present.
fn deprecation(d: Option<cst::Directives>, at: &str) -> Result<Deprecation, NormalizeError> {
    let Some(d) = d else { return Ok(None) };
    for directive in d.directives() {
        if directive.name().is_some_and(|n| n.text() == "deprecated") {
            let mut reason = DEFAULT_DEPRECATION_REASON.to_string();
            for arg in directive
                .arguments()
                .into_iter()
                .flat_map(|a| a.arguments())
            {
                if arg.name().is_some_and(|n| n.text() == "reason") {
                    let text = arg.value().map(|v| v.syntax().text().to_string());
                    match text.as_deref().map(parse_value) {
                        Some(Ok(serde_json::Value::String(s))) => reason = s,
                        Some(Ok(serde_json::Value::Null)) => {}
                        _ => return Err(invalid(at, "@deprecated reason must be a string")),
                    }
                }
            }
            return Ok(Some(reason));
        }
    }
    Ok(None)
}

fn fields(owner: &str, f: Option<cst::FieldsDefinition>) -> Result<Vec<Field>, NormalizeError> {
    let mut out = Vec::new();
    for field in f.into_iter().flat_map(|f| f.field_definitions()) {
        let name = name_of(field.name(), owner)?;
        let at = format!("{owner}.{name}");
        out.push(Field {
            description: description(field.description())?,
            args: input_values(
                &at,
                field
                    .arguments_definition()
                    .map(|a| a.input_value_definitions()),
            )?,
            ty: type_ref(field.ty(), &at)?,
            deprecated: deprecation(field.directives(), &at)?,
            directives: applied(field.directives(), &at, &["deprecated"])?,
            name,
        });
    }
    last_wins(&mut out, |f| &f.name);
    Ok(out)
}

fn input_values(
    owner: &str,
    defs: Option<cst::CstChildren<cst::InputValueDefinition>>,
) -> Result<Vec<InputValue>, NormalizeError> {
    let mut out = Vec::new();
    for v in defs.into_iter().flatten() {
        let name = name_of(v.name(), owner)?;
        let at = format!("{owner}.{name}");
        let default = match v.default_value().and_then(|d| d.value()) {
            Some(value) => Some(
                parse_value(&value.syntax().text().to_string())
                    .map_err(|e| invalid(&at, format!("default value: {e}")))?,
            ),
            None => None,
        };
        out.push(InputValue {
            description: description(v.description())?,
            ty: type_ref(v.ty(), &at)?,
            default,
            deprecated: deprecation(v.directives(), &at)?,
            directives: applied(v.directives(), &at, &["deprecated"])?,
            name,
        });
    }
    last_wins(&mut out, |f| &f.name);
    Ok(out)
}

fn enum_values(e: Option<cst::EnumValuesDefinition>) -> Result<Vec<EnumValue>, NormalizeError> {
    let mut out = Vec::new();
    for v in e.into_iter().flat_map(|e| e.enum_value_definitions()) {
        let name = name_of(v.enum_value().and_then(|e| e.name()), "enum")?;
        out.push(EnumValue {
            description: description(v.description())?,
            deprecated: deprecation(v.directives(), &name)?,
            directives: applied(v.directives(), &name, &["deprecated"])?,
            name,
        });
    }
    Ok(out)
}
