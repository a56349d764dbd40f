""" Contains all the data models used in inputs/outputs """

from .activity_out import ActivityOut
from .asset_out import AssetOut
from .asset_ref import AssetRef
from .audit_out import AuditOut
from .environment_create import EnvironmentCreate
from .environment_create_env import EnvironmentCreateEnv
from .environment_create_features import EnvironmentCreateFeatures
from .environment_create_features_additional_property_type_0 import EnvironmentCreateFeaturesAdditionalPropertyType0
from .environment_create_idle_action import EnvironmentCreateIdleAction
from .environment_create_pool_size_type_2 import EnvironmentCreatePoolSizeType2
from .environment_out import EnvironmentOut
from .environment_out_env import EnvironmentOutEnv
from .environment_out_features import EnvironmentOutFeatures
from .environment_out_features_additional_property_type_0 import EnvironmentOutFeaturesAdditionalPropertyType0
from .environment_out_idle_action import EnvironmentOutIdleAction
from .environment_out_pool_size_type_2 import EnvironmentOutPoolSizeType2
from .environment_update import EnvironmentUpdate
from .environment_update_env_type_0 import EnvironmentUpdateEnvType0
from .environment_update_features_type_0 import EnvironmentUpdateFeaturesType0
from .environment_update_features_type_0_additional_property_type_0 import EnvironmentUpdateFeaturesType0AdditionalPropertyType0
from .environment_update_idle_action_type_1 import EnvironmentUpdateIdleActionType1
from .environment_update_idle_action_type_2_type_1 import EnvironmentUpdateIdleActionType2Type1
from .environment_update_idle_action_type_3_type_1 import EnvironmentUpdateIdleActionType3Type1
from .environment_update_pool_size_type_2 import EnvironmentUpdatePoolSizeType2
from .exec_in import ExecIn
from .exec_in_env import ExecInEnv
from .exec_in_stdin_encoding import ExecInStdinEncoding
from .exec_out import ExecOut
from .exec_out_encoding import ExecOutEncoding
from .file_written import FileWritten
from .healthz_healthz_response_200 import HealthzHealthzResponse200
from .key_create import KeyCreate
from .key_create_scopes_type_0_item import KeyCreateScopesType0Item
from .key_created import KeyCreated
from .key_out import KeyOut
from .manifest_entry import ManifestEntry
from .manifest_entry_encoding import ManifestEntryEncoding
from .problem import Problem
from .process_input import ProcessInput
from .process_out import ProcessOut
from .process_start import ProcessStart
from .process_start_env import ProcessStartEnv
from .pty_token import PtyToken
from .readyz_readyz_response_200 import ReadyzReadyzResponse200
from .readyz_readyz_response_503 import ReadyzReadyzResponse503
from .resume_out import ResumeOut
from .resume_out_how import ResumeOutHow
from .sandbox_create import SandboxCreate
from .sandbox_create_env import SandboxCreateEnv
from .sandbox_event_out import SandboxEventOut
from .sandbox_out import SandboxOut
from .session_create import SessionCreate
from .session_out import SessionOut
from .session_out_state import SessionOutState
from .snapshot_out import SnapshotOut
from .snapshot_out_diff import SnapshotOutDiff
from .tenant_create import TenantCreate
from .tenant_out import TenantOut
from .tenant_update import TenantUpdate
from .tenant_usage_out import TenantUsageOut
from .v1_environments_features_features_response_200_item import V1EnvironmentsFeaturesFeaturesResponse200Item
from .v1_sessions_session_id_features_activity_call_body import V1SessionsSessionIdFeaturesActivityCallBody
from .workspace_imported import WorkspaceImported

__all__ = (
    "ActivityOut",
    "AssetOut",
    "AssetRef",
    "AuditOut",
    "EnvironmentCreate",
    "EnvironmentCreateEnv",
    "EnvironmentCreateFeatures",
    "EnvironmentCreateFeaturesAdditionalPropertyType0",
    "EnvironmentCreateIdleAction",
    "EnvironmentCreatePoolSizeType2",
    "EnvironmentOut",
    "EnvironmentOutEnv",
    "EnvironmentOutFeatures",
    "EnvironmentOutFeaturesAdditionalPropertyType0",
    "EnvironmentOutIdleAction",
    "EnvironmentOutPoolSizeType2",
    "EnvironmentUpdate",
    "EnvironmentUpdateEnvType0",
    "EnvironmentUpdateFeaturesType0",
    "EnvironmentUpdateFeaturesType0AdditionalPropertyType0",
    "EnvironmentUpdateIdleActionType1",
    "EnvironmentUpdateIdleActionType2Type1",
    "EnvironmentUpdateIdleActionType3Type1",
    "EnvironmentUpdatePoolSizeType2",
    "ExecIn",
    "ExecInEnv",
    "ExecInStdinEncoding",
    "ExecOut",
    "ExecOutEncoding",
    "FileWritten",
    "HealthzHealthzResponse200",
    "KeyCreate",
    "KeyCreated",
    "KeyCreateScopesType0Item",
    "KeyOut",
    "ManifestEntry",
    "ManifestEntryEncoding",
    "Problem",
    "ProcessInput",
    "ProcessOut",
    "ProcessStart",
    "ProcessStartEnv",
    "PtyToken",
    "ReadyzReadyzResponse200",
    "ReadyzReadyzResponse503",
    "ResumeOut",
    "ResumeOutHow",
    "SandboxCreate",
    "SandboxCreateEnv",
    "SandboxEventOut",
    "SandboxOut",
    "SessionCreate",
    "SessionOut",
    "SessionOutState",
    "SnapshotOut",
    "SnapshotOutDiff",
    "TenantCreate",
    "TenantOut",
    "TenantUpdate",
    "TenantUsageOut",
    "V1EnvironmentsFeaturesFeaturesResponse200Item",
    "V1SessionsSessionIdFeaturesActivityCallBody",
    "WorkspaceImported",
)
