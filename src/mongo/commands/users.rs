//! User and role management: `createUser`, `updateUser`, `dropUser`,
//! `dropAllUsersFromDatabase`, `usersInfo`, `grantRolesToUser`, `revokeRolesFromUser`, and
//! user-defined roles that bundle built-in ones (`createRole`, `dropRole`, `rolesInfo`).
//!
//! Users get SCRAM-SHA-1 and SCRAM-SHA-256 credentials unless `mechanisms` says otherwise;
//! the password itself is never stored, logged or echoed. Every change bumps the catalog
//! version, so every docgate instance sees it on its next command, and drops the user's
//! remembered password verifications at once.
//!
//! Not for: authenticating (`auth.rs`) or what roles allow (`crate::auth::roles`).

use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, Document};

use crate::auth::service::derive_credentials_blocking;
use crate::auth::users::new_uuid;
use crate::auth::{BuiltinRole, RoleGrant, RoleRecord, ScramMechanism, UserRecord};
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::{opt_array, opt_bool, opt_document, opt_str, CommandRequest};
use crate::store::StoreError;

/// The fields of `createUser` and `updateUser` besides the name.
const USER_FIELDS: &[&str] = &["pwd", "roles", "customData", "mechanisms", "digestPassword"];

/// Fields every user command may carry besides its own.
const COMMON_FIELDS: &[&str] = &["writeConcern", "comment"];

/// `createUser`.
pub async fn create_user(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    check_fields(request, USER_FIELDS)?;
    let name = target_name(request, "createUser")?;
    let db = request.db.as_str();
    if db == "local" {
        return Err(OpError::BadValue(
            "Cannot create users in the local database".into(),
        ));
    }
    let roles_value = opt_array(&request.body, "roles")?
        .ok_or_else(|| OpError::missing_field("createUser.roles"))?;
    let roles = parse_roles(context, db, roles_value).await?;
    let password = opt_str(&request.body, "pwd")?;
    let credentials = match (password, db) {
        (Some(_), "$external") => {
            return Err(OpError::BadValue(
                "Cannot create a user with a password in the $external database".into(),
            ))
        }
        (Some(password), _) => {
            let mechanisms = mechanisms(request)?;
            derive_credentials_blocking(name, password, &mechanisms).await?
        }
        (None, "$external") => Vec::new(),
        (None, _) => {
            return Err(OpError::BadValue(
                "Must provide a 'pwd' field for all user documents, except those with \
                 '$external' as the user's source db"
                    .into(),
            ))
        }
    };
    let user = UserRecord {
        db: db.to_owned(),
        name: name.to_owned(),
        user_id: new_uuid(),
        credentials,
        roles,
        custom_data: custom_data(request)?,
    };
    match context.server.state.auth.create_user(&user).await {
        Ok(()) => {
            tracing::info!(user = %name, db = %db, "user created");
            Ok(Document::new())
        }
        Err(StoreError::AlreadyExists(_)) => Err(OpError::UserExists(format!(
            "User \"{name}@{db}\" already exists"
        ))),
        Err(error) => Err(error.into()),
    }
}

/// `updateUser`: a new password, new roles (replacing the old ones) or new customData.
pub async fn update_user(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    check_fields(request, USER_FIELDS)?;
    let name = target_name(request, "updateUser")?;
    let mut user = existing_user(context, &request.db, name).await?;
    if let Some(roles) = opt_array(&request.body, "roles")? {
        user.roles = parse_roles(context, &request.db, roles).await?;
    }
    if request.body.contains_key("customData") {
        user.custom_data = custom_data(request)?;
    }
    if let Some(password) = opt_str(&request.body, "pwd")? {
        let mechanisms = match request.body.contains_key("mechanisms") {
            true => mechanisms(request)?,
            false => user.credentials.iter().map(|c| c.mechanism).collect(),
        };
        user.credentials = derive_credentials_blocking(name, password, &mechanisms).await?;
    } else if request.body.contains_key("mechanisms") {
        // Without a password, mechanisms can only be narrowed.
        let keep = mechanisms(request)?;
        user.credentials.retain(|c| keep.contains(&c.mechanism));
    }
    save(context, &user).await
}

/// `dropUser`.
pub async fn drop_user(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    check_fields(request, &[])?;
    let name = target_name(request, "dropUser")?;
    let dropped = context
        .server
        .state
        .auth
        .drop_users(&request.db, Some(name))
        .await?;
    if dropped == 0 {
        return Err(user_not_found(name, &request.db));
    }
    tracing::info!(user = %name, db = %request.db, "user dropped");
    Ok(Document::new())
}

/// `dropAllUsersFromDatabase`.
pub async fn drop_all_users(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    check_fields(request, &[])?;
    let dropped = context
        .server
        .state
        .auth
        .drop_users(&request.db, None)
        .await?;
    Ok(doc! {"n": i64::try_from(dropped).unwrap_or(i64::MAX)})
}

/// `grantRolesToUser`.
pub async fn grant_roles(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    change_roles(context, request, "grantRolesToUser", true).await
}

/// `revokeRolesFromUser`.
pub async fn revoke_roles(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    change_roles(context, request, "revokeRolesFromUser", false).await
}

async fn change_roles(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
    command: &str,
    grant: bool,
) -> CommandResult {
    check_fields(request, &["roles"])?;
    let name = target_name(request, command)?;
    let roles_value = opt_array(&request.body, "roles")?
        .ok_or_else(|| OpError::missing_field(&format!("{command}.roles")))?;
    let roles = parse_roles(context, &request.db, roles_value).await?;
    let mut user = existing_user(context, &request.db, name).await?;
    for role in roles {
        let held = user.roles.contains(&role);
        if grant && !held {
            user.roles.push(role);
        } else if !grant && held {
            user.roles.retain(|r| *r != role);
        }
    }
    save(context, &user).await
}

/// `usersInfo`: `1` (the database's users), a name, `{user, db}`, an array of these, or
/// `{forAllDBs: true}`.
pub async fn users_info(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    check_fields(
        request,
        &[
            "showCredentials",
            "showPrivileges",
            "showAuthenticationRestrictions",
            "showCustomData",
            "filter",
        ],
    )?;
    let show_credentials = opt_bool(&request.body, "showCredentials")?.unwrap_or(false);
    let show_custom_data = opt_bool(&request.body, "showCustomData")?.unwrap_or(true);
    let auth = &context.server.state.auth;
    let wanted: Option<Vec<(String, String)>> = match request.target() {
        Bson::Document(spec) if spec.get_bool("forAllDBs").unwrap_or(false) => None,
        Bson::Array(items) => Some(
            items
                .iter()
                .map(|item| user_spec(item, &request.db))
                .collect::<Result<_, _>>()?,
        ),
        Bson::String(_) | Bson::Document(_) => {
            Some(vec![user_spec(request.target(), &request.db)?])
        }
        _ => Some(Vec::new()),
    };
    let users = match &wanted {
        None => auth.users(None).await?,
        Some(specs) if specs.is_empty() => auth.users(Some(&request.db)).await?,
        Some(specs) => {
            let mut found = Vec::new();
            for (db, name) in specs {
                if let Some(user) = auth.user(db, name).await? {
                    found.push(user);
                }
            }
            found
        }
    };
    let users: Vec<Bson> = users
        .iter()
        .map(|user| Bson::Document(user_document(user, show_credentials, show_custom_data)))
        .collect();
    Ok(doc! {"users": users})
}

/// `createRole`: a role that inherits built-in roles (privileges of its own are not
/// supported; `privileges` must be empty).
pub async fn create_role(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    check_fields(
        request,
        &["privileges", "roles", "authenticationRestrictions"],
    )?;
    let name = target_name(request, "createRole")?;
    if BuiltinRole::from_name(name).is_some() {
        return Err(OpError::BadValue(format!(
            "Cannot create roles with the same name as a built-in role: {name}"
        )));
    }
    let privileges = opt_array(&request.body, "privileges")?
        .ok_or_else(|| OpError::missing_field("createRole.privileges"))?;
    if !privileges.is_empty() {
        return Err(OpError::NotSupported(
            "user-defined roles with privileges of their own are not supported by docgate; \
             give the role built-in roles in 'roles' and 'privileges: []'"
                .into(),
        ));
    }
    let roles_value = opt_array(&request.body, "roles")?
        .ok_or_else(|| OpError::missing_field("createRole.roles"))?;
    let role = RoleRecord {
        db: request.db.clone(),
        name: name.to_owned(),
        roles: parse_roles(context, &request.db, roles_value).await?,
    };
    match context.server.state.auth.create_role(&role).await {
        Ok(()) => Ok(Document::new()),
        Err(StoreError::AlreadyExists(_)) => Err(OpError::RoleExists(format!(
            "Role \"{name}@{}\" already exists",
            request.db
        ))),
        Err(error) => Err(error.into()),
    }
}

/// `dropRole`.
pub async fn drop_role(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    check_fields(request, &[])?;
    let name = target_name(request, "dropRole")?;
    if !context
        .server
        .state
        .auth
        .drop_role(&request.db, name)
        .await?
    {
        return Err(OpError::RoleNotFound(format!(
            "Role {name}@{} not found",
            request.db
        )));
    }
    Ok(Document::new())
}

/// `rolesInfo`: `1` (the database's user-defined roles, plus the built-in ones with
/// `showBuiltinRoles`), a name, `{role, db}` or an array of these.
pub async fn roles_info(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    check_fields(
        request,
        &[
            "showBuiltinRoles",
            "showPrivileges",
            "showAuthenticationRestrictions",
        ],
    )?;
    let defined = context.server.state.auth.roles(Some(&request.db)).await?;
    let entry = |db: &str, name: &str| -> Option<Document> {
        if let Some(builtin) = BuiltinRole::from_name(name) {
            if builtin.admin_only() && db != "admin" {
                return None;
            }
            return Some(role_document(db, name, true, &[]));
        }
        defined
            .iter()
            .find(|r| r.db == db && r.name == name)
            .map(|r| role_document(db, name, false, &r.roles))
    };
    let mut roles = Vec::new();
    match request.target() {
        Bson::String(name) => roles.extend(entry(&request.db, name)),
        Bson::Document(spec) => {
            let (db, name) = role_spec(spec, &request.db)?;
            roles.extend(entry(&db, &name));
        }
        Bson::Array(items) => {
            for item in items {
                let (db, name) = match item {
                    Bson::String(name) => (request.db.clone(), name.clone()),
                    Bson::Document(spec) => role_spec(spec, &request.db)?,
                    _ => return Err(OpError::BadValue("invalid role spec".into())),
                };
                roles.extend(entry(&db, &name));
            }
        }
        _ => {
            if opt_bool(&request.body, "showBuiltinRoles")?.unwrap_or(false) {
                for builtin in BuiltinRole::ALL {
                    roles.extend(entry(&request.db, builtin.name()));
                }
            }
            for role in &defined {
                roles.push(role_document(&role.db, &role.name, false, &role.roles));
            }
        }
    }
    let roles: Vec<Bson> = roles.into_iter().map(Bson::Document).collect();
    Ok(doc! {"roles": roles})
}

fn role_document(db: &str, name: &str, builtin: bool, inherited: &[RoleGrant]) -> Document {
    doc! {
        "_id": format!("{db}.{name}"),
        "role": name,
        "db": db,
        "isBuiltin": builtin,
        "roles": grants_bson(inherited),
        "inheritedRoles": grants_bson(inherited),
    }
}

fn role_spec(spec: &Document, default_db: &str) -> Result<(String, String), OpError> {
    let name = spec
        .get_str("role")
        .map_err(|_| OpError::BadValue("role spec needs a 'role' name".into()))?;
    let db = spec.get_str("db").unwrap_or(default_db);
    Ok((db.to_owned(), name.to_owned()))
}

/// Refuses fields outside `own` and the common ones. User management still lists its
/// fields up front instead of taking them one by one (the fields listed are those its
/// handlers read).
fn check_fields(request: &CommandRequest, own: &[&str]) -> Result<(), OpError> {
    let mut arguments = request.arguments();
    for field in own.iter().chain(COMMON_FIELDS) {
        arguments.value(field);
    }
    arguments.finish()
}

fn target_name<'a>(request: &'a CommandRequest, command: &str) -> Result<&'a str, OpError> {
    match request.target() {
        Bson::String(name) if !name.is_empty() => Ok(name),
        Bson::String(_) => Err(OpError::BadValue(format!(
            "{command} needs a non-empty name"
        ))),
        other => Err(OpError::TypeMismatch(format!(
            "BSON field '{command}' is the wrong type '{}', expected type 'string'",
            crate::mongo::request::type_name(other)
        ))),
    }
}

async fn existing_user(
    context: &CommandContext<'_>,
    db: &str,
    name: &str,
) -> Result<UserRecord, OpError> {
    context
        .server
        .state
        .auth
        .user(db, name)
        .await?
        .ok_or_else(|| user_not_found(name, db))
}

async fn save(context: &CommandContext<'_>, user: &UserRecord) -> CommandResult {
    if !context.server.state.auth.replace_user(user).await? {
        return Err(user_not_found(&user.name, &user.db));
    }
    tracing::info!(user = %user.name, db = %user.db, "user updated");
    Ok(Document::new())
}

fn user_not_found(name: &str, db: &str) -> OpError {
    OpError::UserNotFound(format!("Could not find user \"{name}\" for db \"{db}\""))
}

/// Role grants from a command: `"read"` (in `db`) or `{role, db}`; each must exist.
async fn parse_roles(
    context: &CommandContext<'_>,
    db: &str,
    value: &[Bson],
) -> Result<Vec<RoleGrant>, OpError> {
    let defined = context.server.state.auth.roles(None).await?;
    let mut grants = Vec::new();
    for item in value {
        let grant = match item {
            Bson::String(role) => RoleGrant::new(role.as_str(), db),
            Bson::Document(spec) => {
                let (role_db, role) = role_spec(spec, db)?;
                RoleGrant::new(role, role_db)
            }
            _ => {
                return Err(OpError::BadValue(
                    "a role must be a name or a {role, db} document".into(),
                ))
            }
        };
        let exists = match BuiltinRole::from_name(&grant.role) {
            Some(builtin) => !builtin.admin_only() || grant.db == "admin",
            None => defined
                .iter()
                .any(|r| r.name == grant.role && r.db == grant.db),
        };
        if !exists {
            return Err(OpError::RoleNotFound(format!(
                "Could not find role: {}@{}",
                grant.role, grant.db
            )));
        }
        if !grants.contains(&grant) {
            grants.push(grant);
        }
    }
    Ok(grants)
}

fn mechanisms(request: &CommandRequest) -> Result<Vec<ScramMechanism>, OpError> {
    let Some(names) = opt_array(&request.body, "mechanisms")? else {
        return Ok(vec![ScramMechanism::Sha1, ScramMechanism::Sha256]);
    };
    let mut out = Vec::new();
    for name in names {
        let mechanism = match name {
            Bson::String(name) => ScramMechanism::from_name(name),
            _ => None,
        }
        .ok_or_else(|| OpError::BadValue(format!("Unknown auth mechanism '{name}'")))?;
        if !out.contains(&mechanism) {
            out.push(mechanism);
        }
    }
    if out.is_empty() {
        return Err(OpError::BadValue(
            "mechanisms field must not be empty".into(),
        ));
    }
    Ok(out)
}

fn custom_data(request: &CommandRequest) -> Result<Option<serde_json::Value>, OpError> {
    Ok(opt_document(&request.body, "customData")?
        .map(|data| Bson::Document(data.clone()).into_canonical_extjson()))
}

fn user_spec(item: &Bson, default_db: &str) -> Result<(String, String), OpError> {
    match item {
        Bson::String(name) => Ok((default_db.to_owned(), name.clone())),
        Bson::Document(spec) => {
            let name = spec
                .get_str("user")
                .map_err(|_| OpError::BadValue("user spec needs a 'user' name".into()))?;
            Ok((
                spec.get_str("db").unwrap_or(default_db).to_owned(),
                name.to_owned(),
            ))
        }
        _ => Err(OpError::BadValue(
            "User and role names must be either strings or objects".into(),
        )),
    }
}

fn user_document(user: &UserRecord, show_credentials: bool, show_custom_data: bool) -> Document {
    let mut out = doc! {"_id": user.full_name()};
    if let Some(uuid) = uuid_bytes(&user.user_id) {
        out.insert(
            "userId",
            Binary {
                subtype: BinarySubtype::Uuid,
                bytes: uuid,
            },
        );
    }
    out.insert("user", &user.name);
    out.insert("db", &user.db);
    if show_custom_data {
        if let Some(data) = user
            .custom_data
            .as_ref()
            .and_then(|value| Bson::try_from(value.clone()).ok())
        {
            out.insert("customData", data);
        }
    }
    out.insert("roles", grants_bson(&user.roles));
    if show_credentials {
        let mut credentials = Document::new();
        for credential in &user.credentials {
            credentials.insert(
                credential.mechanism.name(),
                doc! {
                    "iterationCount": i64::from(credential.iterations),
                    "salt": credential.salt_base64(),
                    "storedKey": credential.stored_key_base64(),
                    "serverKey": credential.server_key_base64(),
                },
            );
        }
        out.insert("credentials", credentials);
    }
    out.insert("mechanisms", user.mechanisms());
    out
}

fn grants_bson(grants: &[RoleGrant]) -> Vec<Bson> {
    grants
        .iter()
        .map(|g| Bson::Document(doc! {"role": &g.role, "db": &g.db}))
        .collect()
}

fn uuid_bytes(text: &str) -> Option<Vec<u8>> {
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 {
        return None;
    }
    (0..32)
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
}
