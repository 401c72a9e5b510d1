"""The request pipeline of kube-apiserver, minus HTTP: decode, default, admit, validate, store, react.

The order of steps is what clients can observe, so it follows the apiserver: request defaults, mutating
webhooks, create-time fields (uid, Job selector), schema/type validation, validating webhooks, then the
resourceVersion-checked write. Admission is behind a Protocol so the in-process test API (`FakeApi.create`)
can bypass it for setup. After a write, small synchronous reactions stand in for the controllers a cluster
runs (garbage collection, namespace cleanup, CRD registration, the Job controller's Suspended condition).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from tests.fakeapi import builtins, patches, pods, schema
from tests.fakeapi import meta as object_meta
from tests.fakeapi.errors import (
    ApiError,
    bad_request,
    conflict,
    internal,
    invalid,
    namespace_not_found,
    namespace_terminating,
    not_found,
)
from tests.fakeapi.identity import ADMIN, UserInfo
from tests.fakeapi.jobs import job_controller_status
from tests.fakeapi.resources import Registry, ResourceType
from tests.fakeapi.store import Obj, Store, now_rfc3339

PATCH_JSON = "application/json-patch+json"
PATCH_MERGE = "application/merge-patch+json"
PATCH_STRATEGIC = "application/strategic-merge-patch+json"
PATCH_APPLY = "application/apply-patch+yaml"


@dataclass(frozen=True)
class AdmissionRequest:
    rtype: ResourceType
    operation: str  # CREATE | UPDATE | DELETE
    subresource: str
    namespace: str
    name: str
    obj: Obj | None
    old_obj: Obj | None
    user: UserInfo
    dry_run: bool
    options: dict[str, Any]


class Admission(Protocol):
    """Calls the registered webhooks; returns the (possibly patched) object or raises the denial."""

    async def mutate(self, request: AdmissionRequest) -> Obj | None: ...

    async def validate(self, request: AdmissionRequest) -> None: ...


class Conversion(Protocol):
    async def convert(self, crd: Obj, objects: list[Obj], desired_api_version: str) -> list[Obj]: ...


_CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")


class NoAdmission:
    async def mutate(self, request: AdmissionRequest) -> Obj | None:
        return request.obj

    async def validate(self, request: AdmissionRequest) -> None:
        return None


class Faults:
    """Test-controlled misbehaviour applied to the next write requests."""

    def __init__(self) -> None:
        self.pending: list[int] = []

    def fail_next_writes(self, count: int, status: int) -> None:
        self.pending.extend([status] * count)

    def take(self, rtype: ResourceType, name: str) -> None:
        if not self.pending:
            return
        status = self.pending.pop(0)
        if status == 409:
            raise conflict(plural=rtype.plural, group=rtype.group, name=name)
        if status == 500:
            raise internal("injected fault")
        if status == 429:
            raise ApiError(
                code=429, reason="TooManyRequests", message="the server has received too many requests"
            )
        raise ApiError(code=status, reason="InternalError", message=f"injected fault {status}")


def _strict(options: dict[str, Any] | None) -> bool:
    return (options or {}).get("fieldValidation") == "Strict"


_GENERATION_KINDS = frozenset(
    {
        ("batch", "Job"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
    }
)


def _tracks_generation(rtype: ResourceType) -> bool:
    """Custom resources, and built-in kinds whose strategy maintains metadata.generation (not ConfigMaps)."""
    return not rtype.builtin or (rtype.group, rtype.kind) in _GENERATION_KINDS


def _spec_part(rtype: ResourceType, obj: Obj) -> Obj:
    """What counts for metadata.generation: everything but metadata (and status when it is a subresource)."""
    skip = {"metadata", "apiVersion", "kind"}
    if rtype.status_subresource or rtype.builtin:
        skip.add("status")
    return {k: v for k, v in obj.items() if k not in skip}


class Api:
    def __init__(
        self,
        *,
        store: Store,
        registry: Registry,
        admission: Admission | None = None,
        conversion: Conversion | None = None,
        job_controller: bool = True,
        namespace_deletion_delay: float = 1.0,
    ) -> None:
        self.store = store
        self.registry = registry
        self.admission: Admission = admission or NoAdmission()
        self.conversion = conversion
        self.faults = Faults()
        self.job_controller = job_controller
        self.namespace_deletion_delay = namespace_deletion_delay
        self.after_write: list[Callable[[ResourceType, str, Obj], None]] = []

    # ---- decoding and defaults ---------------------------------------------------------------------------
    def decode(self, rtype: ResourceType, body: Any, *, strict: bool = False) -> Obj:
        obj = builtins.require_dict(body)
        kind = obj.get("kind")
        if kind is not None and kind != rtype.kind:
            raise bad_request(
                f"the API version in the data ({obj.get('apiVersion')}) does not match the expected "
                f"API version "
                f"({rtype.api_version})"
                if obj.get("apiVersion") not in (None, rtype.api_version)
                else f'kind "{kind}" does not match the expected kind "{rtype.kind}"'
            )
        obj["apiVersion"] = rtype.api_version
        obj["kind"] = rtype.kind
        meta = obj.get("metadata")
        if meta is None:
            obj["metadata"] = {}
        elif not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        self.apply_defaults(rtype, obj, strict=strict)
        return obj

    def apply_defaults(self, rtype: ResourceType, obj: Obj, *, strict: bool = False) -> None:
        """Request defaulting; with `strict` (fieldValidation=Strict) unknown fields are an error."""
        if rtype.schema is not None:
            unknown = schema.prune(obj, rtype.schema)
            if strict and unknown:
                listed = ", ".join(f'unknown field "{path}"' for path in unknown)
                raise bad_request(
                    f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: '
                    f"strict decoding error: {listed}"
                )
            schema.apply_defaults(obj, rtype.schema)
        elif rtype.kind == "Job":
            builtins.default_job(obj)
        elif rtype.kind == "Namespace":
            builtins.default_namespace(obj)
        elif rtype.kind == "Pod" and rtype.group == "":
            pods.default_pod(obj)
        elif rtype.kind == "Secret" and rtype.group == "":
            builtins.default_secret(obj)
        elif rtype.kind == "PriorityClass" and rtype.group == "scheduling.k8s.io":
            builtins.default_priority_class(obj)
        elif rtype.kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            builtins.default_webhook_configuration(obj)

    def validate(self, rtype: ResourceType, obj: Obj, old: Obj | None, *, status_only: bool = False) -> None:
        """Reject ``obj`` as the apiserver would. With ``status_only`` (a write through ``/status`` of an
        object whose schema is known) everything but the status is the stored object, validated when it
        was stored, so only the status subtree is checked again: a status write costs its own size."""
        name = obj["metadata"].get("name", "")
        if status_only and rtype.schema is not None and old is not None:
            causes = schema.validate_fields(obj, rtype.schema, ("status",))
            if not causes:
                causes = schema.validate_transitions(obj, old, rtype.schema)
            if causes:
                raise invalid(kind=rtype.kind, group=rtype.group, name=name, causes=causes)
            return
        meta_causes = object_meta.validate_object_meta_update(obj, old) if old is not None else []
        meta_causes += object_meta.validate_object_meta(
            obj, namespace_kind=rtype.kind == "Namespace" and not rtype.group
        )
        if rtype.kind == "Job" and rtype.group == "batch":
            template_labels = (
                ((obj.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels")
            )
            meta_causes += object_meta.validate_labels(template_labels, "spec.template.labels")
        if meta_causes:
            raise invalid(kind=rtype.kind, group=rtype.group, name=name, causes=meta_causes)
        if rtype.schema is not None:
            causes = schema.validate(obj, rtype.schema)
            if old is not None and not causes:
                causes = schema.validate_transitions(obj, old, rtype.schema)
            if causes:
                raise invalid(kind=rtype.kind, group=rtype.group, name=name, causes=causes)
        elif rtype.kind == "Job":
            builtins.validate_job(obj)
            if old is not None:
                builtins.validate_job_update(old, obj)
        elif rtype.kind == "Pod" and rtype.group == "":
            pods.validate_pod(obj)
            if old is not None:
                pods.validate_pod_update(old, obj)
        elif (
            rtype.kind == "PriorityClass" and rtype.group == "scheduling.k8s.io" and obj.get("globalDefault")
        ):
            self._one_default_priority_class(name)
        elif rtype.kind == "CustomResourceDefinition" and rtype.group == "apiextensions.k8s.io":
            causes = []
            for index, version in enumerate((obj.get("spec") or {}).get("versions") or []):
                root = ((version or {}).get("schema") or {}).get("openAPIV3Schema")
                if isinstance(root, dict):
                    causes += schema.structural_errors(root, f"spec.versions[{index}].schema.openAPIV3Schema")
            if causes:
                raise invalid(kind=rtype.kind, group=rtype.group, name=name, causes=causes)

    def _one_default_priority_class(self, name: str) -> None:
        """kube-apiserver's Priority admission plugin: a second ``globalDefault`` PriorityClass is refused,
        on create and on update (403, worded as v1.36.2 words it)."""
        for other in self.store.list(("scheduling.k8s.io", "priorityclasses")):
            default = other["metadata"]["name"]
            if other.get("globalDefault") and default != name:
                raise ApiError(
                    code=403,
                    reason="Forbidden",
                    message=(
                        f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: PriorityClass '
                        f"{default} is already marked as default. Only one default can exist"
                    ),
                    details={"name": name, "group": "scheduling.k8s.io", "kind": "priorityclasses"},
                )

    # ---- namespaces --------------------------------------------------------------------------------------
    def _check_namespace(self, rtype: ResourceType, namespace: str, name: str, *, creating: bool) -> None:
        if not rtype.namespaced:
            return
        ns = self.store.get(("", "namespaces"), "", namespace)
        if ns is None:
            raise namespace_not_found(namespace)
        if creating and ns["metadata"].get("deletionTimestamp"):
            raise namespace_terminating(
                namespace=namespace, plural=rtype.plural, group=rtype.group, name=name
            )

    # ---- create ------------------------------------------------------------------------------------------
    async def create(
        self,
        rtype: ResourceType,
        namespace: str,
        body: Any,
        *,
        user: UserInfo = ADMIN,
        dry_run: bool = False,
        options: dict[str, Any] | None = None,
        admit: bool = True,
    ) -> Obj:
        obj = self.decode(rtype, body, strict=_strict(options))
        meta = obj["metadata"]
        if rtype.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = self.store.generate_name(meta["generateName"])
            else:
                builtins.validate_metadata_name(kind=rtype.kind, group=rtype.group, obj=obj)
        name = meta["name"]
        if admit:
            self.faults.take(rtype, name)
        self._check_namespace(rtype, namespace, name, creating=True)
        for field in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation"):
            meta.pop(field, None)
        if rtype.status_subresource and not rtype.builtin:
            obj.pop("status", None)
        request_options = {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions", **(options or {})}
        if rtype.kind == "Pod" and rtype.group == "":
            pods.admit_pod_create(obj)
        if admit:
            seen_type, (seen,) = await self._admission_view(rtype, obj)
            mutated = await self.admission.mutate(
                AdmissionRequest(
                    seen_type, "CREATE", "", namespace, name, seen, None, user, dry_run, request_options
                )
            )
            if mutated is not None and mutated is not seen:
                obj = (await self.converted(rtype, [mutated]))[0]
                self.apply_defaults(rtype, obj)
                meta = obj["metadata"]
        meta["uid"] = self.store.new_uid()
        meta["creationTimestamp"] = now_rfc3339()
        if _tracks_generation(rtype):
            meta["generation"] = 1
        if rtype.kind == "Job" and rtype.group == "batch":
            builtins.prepare_job_create(obj)
        if rtype.kind == "Pod" and rtype.group == "":
            pods.prepare_pod_create(obj)
        self.validate(rtype, obj, None)
        if admit:
            seen_type, (seen,) = await self._admission_view(rtype, obj)
            await self.admission.validate(
                AdmissionRequest(
                    seen_type, "CREATE", "", namespace, name, seen, None, user, dry_run, request_options
                )
            )
        if dry_run:
            return obj
        storage = self.storage_type(rtype)
        (to_store,) = await self.converted(storage, [obj])
        stored = self.store.insert(rtype.storage_key, to_store, plural=rtype.plural)
        self._react(storage, "ADDED", stored)
        return (await self.converted(rtype, [stored]))[0]

    # ---- read --------------------------------------------------------------------------------------------
    def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.store.get(rtype.storage_key, namespace if rtype.namespaced else "", name)
        if obj is None:
            raise not_found(plural=rtype.plural, group=rtype.group, name=name)
        return self.as_version(rtype, obj)

    async def read(self, rtype: ResourceType, namespace: str, name: str) -> Obj:
        """``get`` in the version the client asked for, converted by the CRD's webhook when it has one."""
        return (await self.converted(rtype, [self.get(rtype, namespace, name)]))[0]

    def as_version(self, rtype: ResourceType, obj: Obj) -> Obj:
        """Relabel for kinds whose versions share one schema (conversion strategy None); objects of a CRD
        with a conversion webhook stay as stored until :meth:`converted` calls it."""
        if obj.get("apiVersion") == rtype.api_version or self._conversion_crd(rtype) is not None:
            return obj
        return dict(obj, apiVersion=rtype.api_version)

    def _conversion_crd(self, rtype: ResourceType) -> Obj | None:
        if rtype.builtin or self.conversion is None:
            return None
        crd = self.store.get(_CRDS, "", f"{rtype.plural}.{rtype.group}")
        strategy = (((crd or {}).get("spec") or {}).get("conversion") or {}).get("strategy")
        return crd if strategy == "Webhook" else None

    async def converted(self, rtype: ResourceType, objs: list[Obj]) -> list[Obj]:
        """``objs`` in ``rtype``'s version: one ConversionReview for those in another version, as
        kube-apiserver calls a CRD's conversion webhook on every read and write of a non-storage version."""
        crd = self._conversion_crd(rtype)
        if crd is None or self.conversion is None:
            return [self.as_version(rtype, o) for o in objs]
        foreign = [o for o in objs if o.get("apiVersion") != rtype.api_version]
        if not foreign:
            return objs
        done = iter(await self.conversion.convert(crd, foreign, rtype.api_version))
        return [next(done) if o.get("apiVersion") != rtype.api_version else o for o in objs]

    def storage_type(self, rtype: ResourceType) -> ResourceType:
        """The served type of ``rtype``'s storage version (itself for built-in kinds)."""
        stored = self.registry.get(rtype.group, self._storage_version(rtype), rtype.plural)
        return stored or rtype

    async def _admission_view(
        self, rtype: ResourceType, *objs: Obj | None
    ) -> tuple[ResourceType, list[Obj | None]]:
        """What admission webhooks see: with a conversion webhook, the storage version (kube-apiserver's
        matchPolicy Equivalent, for webhooks registered for the storage version as ours are)."""
        if self._conversion_crd(rtype) is None:
            return rtype, list(objs)
        storage = self.storage_type(rtype)
        present = [o for o in objs if o is not None]
        done = iter(await self.converted(storage, present))
        return storage, [next(done) if o is not None else None for o in objs]

    # ---- update / patch ----------------------------------------------------------------------------------
    async def update(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        *,
        subresource: str = "",
        user: UserInfo = ADMIN,
        dry_run: bool = False,
        options: dict[str, Any] | None = None,
        admit: bool = True,
    ) -> Obj:
        new = self.decode(rtype, body, strict=_strict(options))
        body_name = new["metadata"].get("name")
        if body_name and body_name != name:
            raise bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        expected = new["metadata"].get("resourceVersion") or None
        if expected is None and not rtype.builtin:
            # Custom resources do not allow unconditional updates (their strategy says so).
            raise invalid(
                kind=rtype.kind,
                group=rtype.group,
                name=name,
                causes=[
                    {
                        "reason": "FieldValueInvalid",
                        "message": "Invalid value: 0x0: must be specified for an update",
                        "field": "metadata.resourceVersion",
                    }
                ],
            )

        def build(current: Obj) -> Obj:
            return copy.deepcopy(new)

        return await self._write(
            rtype,
            namespace,
            name,
            build,
            expected_rv=expected,
            subresource=subresource,
            user=user,
            dry_run=dry_run,
            options=options,
            admit=admit,
        )

    async def patch(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        patch_type: str,
        patch: Any,
        *,
        subresource: str = "",
        user: UserInfo = ADMIN,
        dry_run: bool = False,
        options: dict[str, Any] | None = None,
        admit: bool = True,
    ) -> Obj:
        if patch_type == PATCH_STRATEGIC and not rtype.builtin:
            raise ApiError(
                code=415,
                reason="UnsupportedMediaType",
                message=f"the body of the request was in an unknown format - accepted media types include: "
                f"{PATCH_JSON}, {PATCH_MERGE}, {PATCH_APPLY}",
            )
        if patch_type == PATCH_APPLY and not (options or {}).get("fieldManager"):
            # kube-apiserver validates the PatchOptions before reading the object (422, not 400)
            raise ApiError(
                code=422,
                reason="Invalid",
                message='PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                "is required for apply patch",
            )
        expected: str | None = None
        if isinstance(patch, dict):
            expected = (patch.get("metadata") or {}).get("resourceVersion") or None

        strict = _strict(options)

        def build(current: Obj) -> Obj:
            result = apply_patch(current)
            if strict and rtype.schema is not None:
                self.apply_defaults(rtype, copy.deepcopy(result), strict=True)
            return result

        def apply_patch(current: Obj) -> Obj:
            if patch_type == PATCH_JSON:
                return patches.json_patch(current, patch)
            if patch_type == PATCH_MERGE:
                return patches.merge_patch(current, patch)
            if patch_type == PATCH_STRATEGIC:
                return patches.strategic_merge_patch(current, patch)
            if patch_type == PATCH_APPLY:
                return patches.apply_patch(current, patch, rtype.schema)
            raise ApiError(
                code=415, reason="UnsupportedMediaType", message=f"unsupported patch type {patch_type}"
            )

        return await self._write(
            rtype,
            namespace,
            name,
            build,
            expected_rv=expected,
            subresource=subresource,
            user=user,
            dry_run=dry_run,
            options=options,
            admit=admit,
        )

    async def _write(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        build: Callable[[Obj], Obj],
        *,
        expected_rv: str | None,
        subresource: str,
        user: UserInfo,
        dry_run: bool,
        options: dict[str, Any] | None,
        admit: bool,
    ) -> Obj:
        if admit:
            self.faults.take(rtype, name)
        ns = namespace if rtype.namespaced else ""
        request_options = {"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions", **(options or {})}
        for _attempt in range(8):
            current = await self.read(rtype, ns, name)
            if expected_rv is not None and current["metadata"]["resourceVersion"] != expected_rv:
                raise conflict(plural=rtype.plural, group=rtype.group, name=name)
            new = build(current)
            new = self._merge_for_update(rtype, current, new, subresource, bump_generation=False)
            mutated = None
            if admit:
                seen_type, (seen, seen_old) = await self._admission_view(rtype, new, current)
                request = AdmissionRequest(
                    seen_type, "UPDATE", subresource, ns, name, seen, seen_old, user, dry_run, request_options
                )
                mutated = await self.admission.mutate(request)
                if mutated is not None:
                    new = (await self.converted(rtype, [mutated]))[0]
            if mutated is not None or subresource != "status":
                # (an unmutated status write is final already: generation never moves through /status)
                new = self._merge_for_update(rtype, current, new, subresource, bump_generation=True)
            self.validate(rtype, new, current, status_only=subresource == "status")
            if admit:
                seen_type, (seen, seen_old) = await self._admission_view(rtype, new, current)
                await self.admission.validate(
                    AdmissionRequest(
                        seen_type,
                        "UPDATE",
                        subresource,
                        ns,
                        name,
                        seen,
                        seen_old,
                        user,
                        dry_run,
                        request_options,
                    )
                )
            if dry_run:
                return new
            latest = self.store.get(rtype.storage_key, ns, name)
            if latest is None:
                raise not_found(plural=rtype.plural, group=rtype.group, name=name)
            if latest["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
                if expected_rv is not None:
                    raise conflict(plural=rtype.plural, group=rtype.group, name=name)
                # Someone wrote while webhooks ran: rebuild on the new state, as the apiserver retries.
                continue
            if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
                return self._delete_emptied(rtype, ns, name, new)
            storage = self.storage_type(rtype)
            (to_store,) = await self.converted(storage, [new])
            stored = self.store.replace(
                rtype.storage_key,
                to_store,
                expected_rv=current["metadata"]["resourceVersion"],
                plural=rtype.plural,
            )
            if stored is not latest:
                self._react(storage, "MODIFIED", stored)
            return (await self.converted(rtype, [stored]))[0]
        raise internal("too many concurrent writes to the same object")

    def _merge_for_update(
        self, rtype: ResourceType, current: Obj, new: Obj, subresource: str, *, bump_generation: bool
    ) -> Obj:
        """Apply what the apiserver keeps from the stored object: identity, status or spec per endpoint."""
        new["apiVersion"] = rtype.api_version
        new["kind"] = rtype.kind
        if subresource == "status" and rtype.schema is not None:
            # Only the status is taken from the request; the rest is the stored (already defaulted) object.
            status_view = {"status": new["status"]} if "status" in new else {}
            self.apply_defaults(rtype, status_view)
            if "status" in status_view:
                new["status"] = status_view["status"]
            else:
                new.pop("status", None)
        else:
            self.apply_defaults(rtype, new)
        meta = new.setdefault("metadata", {})
        old_meta = current["metadata"]
        for field in ("uid", "creationTimestamp", "namespace", "name", "generation", "deletionTimestamp"):
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        if "deletionGracePeriodSeconds" in old_meta:
            meta["deletionGracePeriodSeconds"] = old_meta["deletionGracePeriodSeconds"]
        for field in ("finalizers", "ownerReferences"):
            if meta.get(field) == []:
                del meta[field]  # ObjectMeta omits empty lists: removing the last one removes the field
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if subresource == "status":
            merged = {k: v for k, v in current.items() if k != "status"}
            if "status" in new:
                merged["status"] = new["status"]
            merged["metadata"] = current["metadata"]
            return patches.copy_json(merged)  # type: ignore[no-any-return]
        if rtype.status_subresource:
            if "status" in current:
                new["status"] = patches.copy_json(current["status"])
            else:
                new.pop("status", None)
        # Like the apiserver's PrepareForUpdate, the bump happens after mutating admission.
        if (
            bump_generation
            and _tracks_generation(rtype)
            and _spec_part(rtype, new) != _spec_part(rtype, current)
        ):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
        return new

    # ---- delete ------------------------------------------------------------------------------------------
    async def delete(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        *,
        user: UserInfo = ADMIN,
        propagation: str | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
        admit: bool = True,
    ) -> Obj:
        if admit:
            self.faults.take(rtype, name)
        ns = namespace if rtype.namespaced else ""
        current = self.get(rtype, ns, name)
        precondition_rv = (preconditions or {}).get("resourceVersion")
        if precondition_rv and precondition_rv != current["metadata"]["resourceVersion"]:
            raise conflict(plural=rtype.plural, group=rtype.group, name=name)
        precondition_uid = (preconditions or {}).get("uid")
        if precondition_uid and precondition_uid != current["metadata"]["uid"]:
            raise ApiError(
                code=409,
                reason="Conflict",
                message=(
                    f"Operation cannot be fulfilled on "
                    f"{rtype.plural}{'.' + rtype.group if rtype.group else ''} "
                    f'"{name}": Precondition failed: UID in precondition: {precondition_uid}, '
                    f"UID in object meta: {current['metadata']['uid']}"
                ),
                details={
                    "name": name,
                    "group": rtype.group,
                    "kind": rtype.plural,
                    "uid": current["metadata"]["uid"],
                },
            )
        if admit:
            await self.admission.validate(
                AdmissionRequest(
                    rtype,
                    "DELETE",
                    "",
                    ns,
                    name,
                    None,
                    current,
                    user,
                    dry_run,
                    {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"},
                )
            )
        if dry_run:
            return (await self.converted(rtype, [current]))[0]
        return (await self.converted(rtype, [self.delete_now(rtype, ns, name, propagation=propagation)]))[0]

    def delete_now(
        self, rtype: ResourceType, namespace: str, name: str, *, propagation: str | None = None
    ) -> Obj:
        current = self.get(rtype, namespace, name)
        meta = current["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if rtype.kind == "Namespace" and rtype.group == "":
            return self._terminate_namespace(rtype, current)
        if finalizers:
            if meta.get("deletionTimestamp"):
                return current
            marked = copy.deepcopy(current)
            marked["metadata"]["deletionTimestamp"] = now_rfc3339()
            marked["metadata"]["deletionGracePeriodSeconds"] = 0
            if _tracks_generation(rtype):
                marked["metadata"]["generation"] = int(meta.get("generation", 1)) + 1
            stored = self.store.replace(
                rtype.storage_key, marked, expected_rv=meta["resourceVersion"], plural=rtype.plural
            )
            self._react(rtype, "MODIFIED", stored)
            return self.as_version(rtype, stored)
        gone = self.store.remove(rtype.storage_key, namespace, name, plural=rtype.plural)
        self._react(rtype, "DELETED", gone)
        self._collect_dependents(gone["metadata"]["uid"], orphan=propagation == "Orphan")
        return self.as_version(rtype, gone)

    def _delete_emptied(self, rtype: ResourceType, namespace: str, name: str, emptied: Obj) -> Obj:
        """An update took the last finalizer off an object being deleted: like kube-apiserver, the update is
        not stored but turned into the deletion. Watchers see DELETED only (no MODIFIED without finalizers),
        carrying the object as stored (its finalizers still listed) at a new resourceVersion; the writer gets
        its updated object back at the resourceVersion it updated."""
        gone = self.store.remove(rtype.storage_key, namespace, name, plural=rtype.plural)
        self._react(rtype, "DELETED", gone)
        self._collect_dependents(gone["metadata"]["uid"], orphan=False)
        return self.as_version(rtype, emptied)

    def _terminate_namespace(self, rtype: ResourceType, namespace: Obj) -> Obj:
        """Mark the namespace Terminating; the namespace controller empties and removes it a moment later.

        The delay matters to clients: `kubectl delete -f` deletes a namespace and then the objects in it,
        which still exist on a real cluster while the namespace terminates.
        """
        name = namespace["metadata"]["name"]
        if namespace["metadata"].get("deletionTimestamp"):
            return namespace
        marked = copy.deepcopy(namespace)
        marked["metadata"]["deletionTimestamp"] = now_rfc3339()
        marked["metadata"]["deletionGracePeriodSeconds"] = 0
        marked.setdefault("status", {})["phase"] = "Terminating"
        stored = self.store.replace(
            rtype.storage_key,
            marked,
            expected_rv=namespace["metadata"]["resourceVersion"],
            plural=rtype.plural,
        )
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._finish_namespace(rtype, name)
        else:
            loop.call_later(self.namespace_deletion_delay, self._finish_namespace, rtype, name)
        return stored

    def _finish_namespace(self, rtype: ResourceType, name: str) -> None:
        if self.store.get(rtype.storage_key, "", name) is None:
            return
        self._empty_namespace(name)
        gone = self.store.remove(rtype.storage_key, "", name, plural=rtype.plural)
        self._react(rtype, "DELETED", gone)

    def _empty_namespace(self, namespace: str) -> None:
        for rtype in list(self.registry.all()):
            if not rtype.namespaced or rtype.version != self._storage_version(rtype):
                continue
            for obj in self.store.list(rtype.storage_key, namespace):
                current = self.store.get(rtype.storage_key, namespace, obj["metadata"]["name"])
                if current is not None:
                    stripped = copy.deepcopy(current)
                    stripped["metadata"].pop("finalizers", None)
                    if stripped != current:
                        self.store.replace(
                            rtype.storage_key,
                            stripped,
                            expected_rv=current["metadata"]["resourceVersion"],
                            plural=rtype.plural,
                        )
                    self.delete_now(rtype, namespace, obj["metadata"]["name"])

    def _storage_version(self, rtype: ResourceType) -> str:
        if rtype.storage_version:
            return rtype.storage_version
        return rtype.served_versions[0] if rtype.served_versions else rtype.version

    def _collect_dependents(self, owner_uid: str, *, orphan: bool) -> None:
        """Background garbage collection: dependents whose ownerReferences name the deleted uid go too."""
        for key, obj in self.store.dependents_of(owner_uid):
            refs = obj["metadata"].get("ownerReferences") or []
            rtype = self._type_for_key(key)
            if rtype is None:
                continue
            meta = obj["metadata"]
            remaining = [ref for ref in refs if ref.get("uid") != owner_uid]
            if orphan or remaining:
                updated = copy.deepcopy(obj)
                if remaining:
                    updated["metadata"]["ownerReferences"] = remaining
                else:
                    updated["metadata"].pop("ownerReferences", None)
                stored = self.store.replace(
                    key, updated, expected_rv=meta["resourceVersion"], plural=rtype.plural
                )
                self._react(rtype, "MODIFIED", stored)
            else:
                self.delete_now(rtype, meta.get("namespace", ""), meta["name"])

    def _type_for_key(self, key: tuple[str, str]) -> ResourceType | None:
        candidates = [t for t in self.registry.all() if t.storage_key == key]
        candidates.sort(key=lambda t: t.version != self._storage_version(t))
        return candidates[0] if candidates else None

    # ---- reactions standing in for cluster controllers ---------------------------------------------------
    def _react(self, rtype: ResourceType, event: str, obj: Obj) -> None:
        meta = obj["metadata"]
        if event != "DELETED" and meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self.delete_now(rtype, meta.get("namespace", ""), meta["name"])
            return
        if rtype.group == "apiextensions.k8s.io" and rtype.kind == "CustomResourceDefinition":
            self._react_crd(event, obj)
        if self.job_controller and rtype.group == "batch" and rtype.kind == "Job" and event != "DELETED":
            self._react_job(rtype, obj)
        for hook in self.after_write:
            hook(rtype, event, obj)

    def _react_crd(self, event: str, crd: Obj) -> None:
        if event == "DELETED":
            self.registry.remove_crd(crd["metadata"]["name"])
            return
        self.registry.add_crd(crd)
        conditions = (crd.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Established" for c in conditions):
            return
        established = copy.deepcopy(crd)
        now = now_rfc3339()
        established["status"] = {
            "acceptedNames": dict(crd["spec"]["names"]),
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "lastTransitionTime": now,
                    "reason": "NoConflicts",
                    "message": "no conflicts found",
                },
                {
                    "type": "Established",
                    "status": "True",
                    "lastTransitionTime": now,
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                },
            ],
            "storedVersions": [v["name"] for v in crd["spec"]["versions"] if v.get("storage")],
        }
        self.store.replace(
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            established,
            expected_rv=crd["metadata"]["resourceVersion"],
            plural="customresourcedefinitions",
        )

    def _react_job(self, rtype: ResourceType, job: Obj) -> None:
        status = job_controller_status(job)
        if status is None or status == job.get("status"):
            return
        updated = dict(job, status=status)
        updated["metadata"] = dict(job["metadata"])
        self.store.replace(
            rtype.storage_key, updated, expected_rv=job["metadata"]["resourceVersion"], plural=rtype.plural
        )
