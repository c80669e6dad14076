"""API permissions by role: platform admin (superuser) writes platform objects; tenant admins
manage their tenant's members; everyone authenticated reads what their tenants may see."""

from rest_framework.permissions import SAFE_METHODS, BasePermission


class IsPlatformAdminOrReadOnly(BasePermission):
    """Reads for any authenticated user; writes for platform admins only."""

    message = "Only platform admins may change this."

    def has_permission(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or request.user.is_superuser
