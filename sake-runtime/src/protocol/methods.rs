//! The request methods sake serves, and in which era each exists.

use super::version::{Era, Revision};

/// A client-to-server request method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// `server/discover` (2026-07-28).
    Discover,
    /// `initialize` (handshake revisions).
    Initialize,
    /// `ping` (handshake revisions).
    Ping,
    /// `logging/setLevel` (handshake revisions).
    SetLevel,
    /// `tools/list`.
    ToolsList,
    /// `tools/call`.
    ToolsCall,
    /// `prompts/list`.
    PromptsList,
    /// `prompts/get`.
    PromptsGet,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourceTemplatesList,
    /// `resources/read`.
    ResourcesRead,
    /// `resources/subscribe` (handshake revisions).
    ResourcesSubscribe,
    /// `resources/unsubscribe` (handshake revisions).
    ResourcesUnsubscribe,
    /// `completion/complete`.
    Complete,
    /// `subscriptions/listen` (2026-07-28).
    Listen,
    /// `tasks/get` (the tasks extension).
    TasksGet,
    /// `tasks/update` (the tasks extension).
    TasksUpdate,
    /// `tasks/cancel` (the tasks extension).
    TasksCancel,
    /// `skills/list` (the skills extension).
    SkillsList,
    /// `skills/get` (the skills extension).
    SkillsGet,
    /// `resources/directory/read` (the skills extension, `directoryRead`).
    DirectoryRead,
}

/// Which server capability a method needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Nothing.
    Nothing,
    /// `tools`.
    Tools,
    /// `prompts`.
    Prompts,
    /// `resources`.
    Resources,
    /// `completions`.
    Completions,
    /// `logging`.
    Logging,
    /// The tasks extension (advertised when a tool may run as a task).
    Tasks,
    /// The skills extension (advertised when the server has skills).
    Skills,
}

impl Method {
    /// Parses a method name; `None` for methods sake does not know in any era.
    pub fn parse(name: &str) -> Option<Method> {
        Some(match name {
            "server/discover" => Method::Discover,
            "initialize" => Method::Initialize,
            "ping" => Method::Ping,
            "logging/setLevel" => Method::SetLevel,
            "tools/list" => Method::ToolsList,
            "tools/call" => Method::ToolsCall,
            "prompts/list" => Method::PromptsList,
            "prompts/get" => Method::PromptsGet,
            "resources/list" => Method::ResourcesList,
            "resources/templates/list" => Method::ResourceTemplatesList,
            "resources/read" => Method::ResourcesRead,
            "resources/subscribe" => Method::ResourcesSubscribe,
            "resources/unsubscribe" => Method::ResourcesUnsubscribe,
            "completion/complete" => Method::Complete,
            "subscriptions/listen" => Method::Listen,
            "tasks/get" => Method::TasksGet,
            "tasks/update" => Method::TasksUpdate,
            "tasks/cancel" => Method::TasksCancel,
            "skills/list" => Method::SkillsList,
            "skills/get" => Method::SkillsGet,
            "resources/directory/read" => Method::DirectoryRead,
            _ => return None,
        })
    }

    /// The method's name on the wire (the inverse of [`parse`](Method::parse)).
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Discover => "server/discover",
            Method::Initialize => "initialize",
            Method::Ping => "ping",
            Method::SetLevel => "logging/setLevel",
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
            Method::PromptsList => "prompts/list",
            Method::PromptsGet => "prompts/get",
            Method::ResourcesList => "resources/list",
            Method::ResourceTemplatesList => "resources/templates/list",
            Method::ResourcesRead => "resources/read",
            Method::ResourcesSubscribe => "resources/subscribe",
            Method::ResourcesUnsubscribe => "resources/unsubscribe",
            Method::Complete => "completion/complete",
            Method::Listen => "subscriptions/listen",
            Method::TasksGet => "tasks/get",
            Method::TasksUpdate => "tasks/update",
            Method::TasksCancel => "tasks/cancel",
            Method::SkillsList => "skills/list",
            Method::SkillsGet => "skills/get",
            Method::DirectoryRead => "resources/directory/read",
        }
    }

    /// Parses a method name and keeps it only if it exists in `era`.
    pub fn parse_in(name: &str, era: Era) -> Option<Method> {
        Method::parse(name).filter(|m| m.exists_in(era))
    }

    /// Whether the method exists in an era. 2026-07-28 removed the handshake, `ping`,
    /// `logging/setLevel` and resource subscriptions; it added discovery and listening. The
    /// methods of the tasks and skills extensions exist where the revision table has them.
    pub fn exists_in(self, era: Era) -> bool {
        match self {
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => Revision::ALL
                .iter()
                .any(|r| r.era() == era && r.features().tasks),
            Method::SkillsList | Method::SkillsGet | Method::DirectoryRead => Revision::ALL
                .iter()
                .any(|r| r.era() == era && r.features().skills),
            Method::Discover | Method::Listen => era == Era::Modern,
            Method::Initialize
            | Method::Ping
            | Method::SetLevel
            | Method::ResourcesSubscribe
            | Method::ResourcesUnsubscribe => era == Era::Legacy,
            _ => true,
        }
    }

    /// The server capability the method needs.
    pub fn needs(self) -> Needs {
        match self {
            Method::ToolsList | Method::ToolsCall => Needs::Tools,
            Method::PromptsList | Method::PromptsGet => Needs::Prompts,
            Method::ResourcesList
            | Method::ResourceTemplatesList
            | Method::ResourcesRead
            | Method::ResourcesSubscribe
            | Method::ResourcesUnsubscribe => Needs::Resources,
            Method::Complete => Needs::Completions,
            Method::SetLevel => Needs::Logging,
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => Needs::Tasks,
            Method::SkillsList | Method::SkillsGet | Method::DirectoryRead => Needs::Skills,
            Method::Discover | Method::Initialize | Method::Ping | Method::Listen => Needs::Nothing,
        }
    }

    /// Whether the method is named by `Mcp-Name` on 2026-07-28 HTTP, and by which param
    /// (the tasks extension: "the client MUST set the `Mcp-Name` header to the value of
    /// `params.taskId`").
    pub fn name_param(self) -> Option<&'static str> {
        match self {
            Method::ToolsCall | Method::PromptsGet => Some("name"),
            Method::ResourcesRead => Some("uri"),
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => Some("taskId"),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        let all = [
            Method::Discover,
            Method::Initialize,
            Method::Ping,
            Method::SetLevel,
            Method::ToolsList,
            Method::ToolsCall,
            Method::PromptsList,
            Method::PromptsGet,
            Method::ResourcesList,
            Method::ResourceTemplatesList,
            Method::ResourcesRead,
            Method::ResourcesSubscribe,
            Method::ResourcesUnsubscribe,
            Method::Complete,
            Method::Listen,
            Method::TasksGet,
            Method::TasksUpdate,
            Method::TasksCancel,
            Method::SkillsList,
            Method::SkillsGet,
            Method::DirectoryRead,
        ];
        for m in all {
            assert_eq!(Method::parse(m.as_str()), Some(m));
        }
    }

    #[test]
    fn removed_methods_do_not_exist_in_2026() {
        for m in [
            "initialize",
            "ping",
            "logging/setLevel",
            "resources/subscribe",
            "resources/unsubscribe",
        ] {
            assert_eq!(Method::parse_in(m, Era::Modern), None, "{m}");
            assert!(Method::parse_in(m, Era::Legacy).is_some(), "{m}");
        }
        assert_eq!(Method::parse_in("server/discover", Era::Legacy), None);
        assert_eq!(Method::parse_in("unknown/method", Era::Modern), None);
    }

    #[test]
    fn task_methods_exist_where_the_table_has_the_extension() {
        for m in ["tasks/get", "tasks/update", "tasks/cancel"] {
            assert!(Method::parse_in(m, Era::Modern).is_some(), "{m}");
            assert_eq!(Method::parse_in(m, Era::Legacy), None, "{m}");
            assert_eq!(
                Method::parse(m).and_then(Method::name_param),
                Some("taskId")
            );
        }
        for m in ["skills/list", "skills/get", "resources/directory/read"] {
            assert!(Method::parse_in(m, Era::Modern).is_some(), "{m}");
            assert_eq!(Method::parse_in(m, Era::Legacy), None, "{m}");
            assert_eq!(Method::parse(m).map(Method::needs), Some(Needs::Skills));
        }
        // Removed by SEP-2663: unknown in every era.
        for m in ["tasks/result", "tasks/list"] {
            assert_eq!(Method::parse(m), None, "{m}");
        }
    }
}
