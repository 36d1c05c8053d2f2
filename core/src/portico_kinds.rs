//! Portico's own kinds as the API server and Portico's pages address them: spelled
//! once here for the UI and the server (the server's derives, which take literals,
//! are checked against these by a test).

use crate::resource::ResourceRef;
use crate::table::wire::TableQuery;

pub const GROUP: &str = "portico.dev";
pub const VERSION: &str = "v1alpha1";
pub const API_VERSION: &str = "portico.dev/v1alpha1";

/// A requested MySQL or Tomcat (`Stack`).
pub const STACK_KIND: &str = "Stack";
pub const STACK_PLURAL: &str = "stacks";
/// A Stack handed to a workload as environment variables (`StackBinding`).
pub const BINDING_KIND: &str = "StackBinding";
pub const BINDING_PLURAL: &str = "stackbindings";

pub fn stacks() -> ResourceRef {
    ResourceRef::new(GROUP, VERSION, STACK_PLURAL)
}

pub fn bindings() -> ResourceRef {
    ResourceRef::new(GROUP, VERSION, BINDING_PLURAL)
}

/// The resource of a workload a StackBinding names (`spec.workload.kind`).
pub fn workload_resource(kind: &str) -> Option<ResourceRef> {
    match kind {
        "Deployment" => Some(ResourceRef::new("apps", "v1", "deployments")),
        "StatefulSet" => Some(ResourceRef::new("apps", "v1", "statefulsets")),
        STACK_KIND => Some(stacks()),
        _ => None,
    }
}

/// Portico's page for what a cell of a StackBinding's row names: the `Stack` column's
/// Stack, the `Workload` column's workload (of the row's `Kind`).
pub fn binding_cell_path(
    column: &str,
    cell: &str,
    workload_kind: &str,
    namespace: Option<&str>,
) -> Option<String> {
    if !crate::resource::is_object_name(cell) {
        return None;
    }
    let resource = match column {
        "Stack" => stacks(),
        "Workload" => workload_resource(workload_kind)?,
        _ => return None,
    };
    Some(resource.object_path(namespace, cell))
}

/// The live table of `resource` (one of the above) in `namespace` (every one the
/// person may list when `None`), filtered by `field_selector`.
pub fn table(
    resource: &ResourceRef,
    namespace: Option<String>,
    field_selector: Option<String>,
) -> TableQuery {
    TableQuery {
        group: resource.group.clone(),
        version: resource.version.clone(),
        plural: resource.plural.clone(),
        namespace,
        label_selector: None,
        field_selector,
        columns: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bindings_stack_and_workload_cells_lead_to_their_pages() {
        assert_eq!(
            binding_cell_path("Workload", "app", "Deployment", Some("team")).as_deref(),
            Some("/r/apps/v1/deployments/team/app")
        );
        assert_eq!(
            binding_cell_path("Stack", "db", "Deployment", Some("team")).as_deref(),
            Some("/r/portico.dev/v1alpha1/stacks/team/db")
        );
        assert_eq!(
            binding_cell_path("Workload", "app", "Job", Some("team")),
            None
        );
        assert_eq!(
            binding_cell_path("Ready", "True", "Deployment", Some("team")),
            None
        );
    }

    #[test]
    fn pages_of_portico_kinds() {
        assert_eq!(stacks().page_path(), "/r/portico.dev/v1alpha1/stacks");
        assert_eq!(bindings().api_version(), API_VERSION);
    }
}
