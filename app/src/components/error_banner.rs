use leptos::prelude::*;

/// Whether `message` is a refusal: Portico's own ("You may not …") or the API
/// server's ("… is forbidden: User … cannot …").
fn is_refusal(message: &str) -> bool {
    message.starts_with("You may not ") || message.contains(" is forbidden: ")
}

/// A message that something failed, and what to do about it: a refusal links to what
/// the person may do (the page starts in the namespace they last worked in).
#[component]
pub fn ErrorBanner(message: String) -> impl IntoView {
    let refused = is_refusal(&message);
    view! {
        <div class="error-banner" role="alert">
            {message}
            {refused.then(|| view! {
                <a class="access-link" href=crate::base::url(&portico_core::access::page_path(None)) data-testid="access-link">
                    "What may I do here?"
                </a>
            })}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::is_refusal;

    #[test]
    fn refusals_are_told_from_other_failures() {
        assert!(is_refusal(
            "You may not create Stack web in namespace team."
        ));
        assert!(is_refusal(
            "pods \"web\" is forbidden: User \"ada\" cannot create resource \"pods/exec\""
        ));
        assert!(!is_refusal(
            "Stack web was not found; it may have been deleted."
        ));
    }
}
