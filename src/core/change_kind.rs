//! What a change is, beside the rule that judges it: [`ChangeKind`], the `kind` of every
//! reported change. One rule may emit several kinds (`request-constraint-tightened`:
//! `constraint_changed`, `enum_changed`, `additional_properties_changed`), so the kind is
//! passed where the change is emitted, typed; reports carry its text, frozen like rule ids.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! change_kinds {
    ($($variant:ident = $text:literal,)*) => {
        /// The kind of a reported change (`Change::kind`), serialized as [`ChangeKind::as_str`]:
        /// its variants are in the order of their texts, so changes sort as they did as text.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum ChangeKind {
            $(#[serde(rename = $text)] $variant,)*
        }

        impl ChangeKind {
            /// Every kind, in the order of their texts.
            pub const ALL: &'static [ChangeKind] = &[$(ChangeKind::$variant,)*];

            /// The text reports and stored changes carry (frozen).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ChangeKind::$variant => $text,)*
                }
            }
        }
    };
}

impl fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

change_kinds! {
    AdditionalPropertiesChanged = "additional_properties_changed",
    AddressingChanged = "addressing_changed",
    AnnotationChanged = "annotation_changed",
    BodyChanged = "body_changed",
    BranchAdded = "branch_added",
    BranchRemoved = "branch_removed",
    CapabilitiesChanged = "capabilities_changed",
    CapabilityGained = "capability_gained",
    CapabilityLost = "capability_lost",
    ChecksChanged = "checks_changed",
    ColumnReordered = "column_reordered",
    ComposableChanged = "composable_changed",
    CompositionChanged = "composition_changed",
    ConstraintChanged = "constraint_changed",
    DeclaredTypesChanged = "declared_types_changed",
    DefaultChanged = "default_changed",
    DefinitionChanged = "definition_changed",
    DefinitionRenamed = "definition_renamed",
    DeprecatedChanged = "deprecated_changed",
    DescriptionChanged = "description_changed",
    DirectiveAdded = "directive_added",
    DirectiveAppliedChanged = "directive_applied_changed",
    DirectiveArgumentAdded = "directive_argument_added",
    DirectiveArgumentChanged = "directive_argument_changed",
    DirectiveArgumentRelaxed = "directive_argument_relaxed",
    DirectiveArgumentRemoved = "directive_argument_removed",
    DirectiveLocationAdded = "directive_location_added",
    DirectiveLocationRemoved = "directive_location_removed",
    DirectiveRemoved = "directive_removed",
    DirectiveRepeatableChanged = "directive_repeatable_changed",
    DocumentationChanged = "documentation_changed",
    EndpointAdded = "endpoint_added",
    EndpointPossiblyRenamed = "endpoint_possibly_renamed",
    EndpointRemoved = "endpoint_removed",
    EndpointRenamed = "endpoint_renamed",
    EndpointUnclassified = "endpoint_unclassified",
    EnumChanged = "enum_changed",
    EnumValueAdded = "enum_value_added",
    EnumValueRemoved = "enum_value_removed",
    ExecutionTargetChanged = "execution_target_changed",
    ExtensibleEnumValueAdded = "extensible_enum_value_added",
    ExtensionChanged = "extension_changed",
    FacetChanged = "facet_changed",
    ForeignKeysChanged = "foreign_keys_changed",
    HiddenTextAdded = "hidden_text_added",
    IndexesChanged = "indexes_changed",
    InstructionsChanged = "instructions_changed",
    ItemsChanged = "items_changed",
    LinksChanged = "links_changed",
    MediaTypeAdded = "media_type_added",
    MediaTypeRemoved = "media_type_removed",
    MetaChanged = "meta_changed",
    MethodChanged = "method_changed",
    NullableChanged = "nullable_changed",
    OdataFactChanged = "odata_fact_changed",
    OneOfChanged = "one_of_changed",
    OptionsChanged = "options_changed",
    ParamStructureChanged = "param_structure_changed",
    ParameterAdded = "parameter_added",
    ParameterEmptyValueChanged = "parameter_empty_value_changed",
    ParameterRemoved = "parameter_removed",
    ParameterRenamed = "parameter_renamed",
    ParameterReordered = "parameter_reordered",
    ParameterRequiredChanged = "parameter_required_changed",
    ParameterStyleChanged = "parameter_style_changed",
    PathChanged = "path_changed",
    PoliciesChanged = "policies_changed",
    PrimaryKeyChanged = "primary_key_changed",
    PrivilegeGranted = "privilege_granted",
    PrivilegeRevoked = "privilege_revoked",
    PropertyAdded = "property_added",
    PropertyRemoved = "property_removed",
    PropertyRequiredChanged = "property_required_changed",
    ReadWriteOnlyChanged = "read_write_only_changed",
    RequestBodyAdded = "request_body_added",
    RequestBodyRemoved = "request_body_removed",
    RequestBodyRequiredChanged = "request_body_required_changed",
    RequestEncodingChanged = "request_encoding_changed",
    ResponseAdded = "response_added",
    ResponseHeaderAdded = "response_header_added",
    ResponseHeaderRemoved = "response_header_removed",
    ResponseHeaderRequiredChanged = "response_header_required_changed",
    ResponseHeaderStyleChanged = "response_header_style_changed",
    ResponseRemoved = "response_removed",
    ResultChanged = "result_changed",
    ResultRequiredChanged = "result_required_changed",
    RootTypeRenamed = "root_type_renamed",
    RowSecurityChanged = "row_security_changed",
    SchemaChanged = "schema_changed",
    SchemaKeywordChanged = "schema_keyword_changed",
    SecurityChanged = "security_changed",
    SecurityDefinerChanged = "security_definer_changed",
    ServersChanged = "servers_changed",
    SideEffectsChanged = "side_effects_changed",
    SpecifiedByChanged = "specified_by_changed",
    StabilityChanged = "stability_changed",
    SunsetChanged = "sunset_changed",
    TitleChanged = "title_changed",
    TriggerAdded = "trigger_added",
    TriggerChanged = "trigger_changed",
    TriggerRemoved = "trigger_removed",
    TypeChanged = "type_changed",
    UnclassifiedChange = "unclassified_change",
    UniqueChanged = "unique_changed",
    VolatilityChanged = "volatility_changed",
}

#[cfg(test)]
mod tests {
    use super::ChangeKind;

    #[test]
    fn kinds_are_sorted_unique_snake_case() {
        for pair in ChangeKind::ALL.windows(2) {
            assert!(pair[0].as_str() < pair[1].as_str(), "{:?}", pair);
        }
        for kind in ChangeKind::ALL {
            let text = kind.as_str();
            assert!(
                text.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{text}"
            );
        }
    }
}
