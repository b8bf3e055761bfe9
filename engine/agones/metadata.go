package agones

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// MetadataPrefix is what the sidecar puts before every label and annotation
// key set through the SDK ("SetLabel(key, value)", agones
// site/content/en/docs/Guides/Client SDKs/_index.md). Read a label set as
// "shard" back as GameServer.ObjectMeta.Labels[MetadataPrefix+"shard"].
const MetadataPrefix = "agones.dev/sdk-"

// Metadata bounds.
const (
	// maxMetaKey keeps "sdk-"+key within the 63 characters Kubernetes
	// allows for the name part of a label or annotation key.
	maxMetaKey = 63 - len("sdk-")
	// maxLabelValue is Kubernetes' label value limit.
	maxLabelValue = 63
	// MaxAnnotationValue bounds one annotation value (Kubernetes allows
	// 256 KiB for all of an object's annotations together).
	MaxAnnotationValue = 64 << 10
	// MaxMetadataEntries bounds SetMetadata and LifecycleConfig's maps.
	MaxMetadataEntries = 64
)

// CheckLabel reports whether key and value are a label the sidecar will
// accept once MetadataPrefix is put before the key: key is 1 to 59 of
// [A-Za-z0-9._-] ending in a letter or digit; value is empty or up to 63 of
// the same, starting and ending with a letter or digit.
func CheckLabel(key, value string) error {
	if err := checkMetaKey("label", key); err != nil {
		return err
	}
	if value == "" {
		return nil
	}
	if len(value) > maxLabelValue || !nameChars(value) || !alnum(value[0]) || !alnum(value[len(value)-1]) {
		return fmt.Errorf("agones: label %q value %q; want up to %d of [A-Za-z0-9._-], starting and ending with a letter or digit, or empty", key, excerpt([]byte(value), 80), maxLabelValue)
	}
	return nil
}

// CheckAnnotation reports whether key and value are an annotation the
// sidecar will accept: key as for CheckLabel, value any text up to
// MaxAnnotationValue bytes.
func CheckAnnotation(key, value string) error {
	if err := checkMetaKey("annotation", key); err != nil {
		return err
	}
	if len(value) > MaxAnnotationValue {
		return fmt.Errorf("agones: annotation %q value is %d bytes; allowed up to %d", key, len(value), MaxAnnotationValue)
	}
	return nil
}

func checkMetaKey(kind, key string) error {
	if key == "" || len(key) > maxMetaKey || !nameChars(key) || !alnum(key[len(key)-1]) {
		return fmt.Errorf("agones: %s key %q; want 1 to %d of [A-Za-z0-9._-] ending in a letter or digit (the sidecar puts %q before it)", kind, excerpt([]byte(key), 80), maxMetaKey, MetadataPrefix)
	}
	return nil
}

func nameChars(s string) bool {
	for i := range len(s) {
		if c := s[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// SetMetadata sets labels then annotations, each key in sorted order, and
// stops at the first failure. All entries are checked before any is sent.
func (s *SDK) SetMetadata(ctx context.Context, labels, annotations map[string]string) error {
	if err := checkMetadata(labels, annotations); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if err := s.SetLabel(ctx, k, labels[k]); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		if err := s.SetAnnotation(ctx, k, annotations[k]); err != nil {
			return err
		}
	}
	return nil
}

func checkMetadata(labels, annotations map[string]string) error {
	if n := len(labels) + len(annotations); n > MaxMetadataEntries {
		return fmt.Errorf("agones: %d labels and annotations; allowed up to %d", n, MaxMetadataEntries)
	}
	for k, v := range labels {
		if err := CheckLabel(k, v); err != nil {
			return err
		}
	}
	for k, v := range annotations {
		if err := CheckAnnotation(k, v); err != nil {
			return err
		}
	}
	return nil
}
