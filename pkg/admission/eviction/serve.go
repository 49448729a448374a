package eviction

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/klog/v2"
)

// maxReviewBytes bounds a review: an eviction is small, and kube-apiserver caps webhook
// requests far below what an attacker reaching the port could send.
const maxReviewBytes = 256 << 10

// ServeHTTP answers kube-apiserver's AdmissionReview (admission.k8s.io/v1).
func (a *Admitter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
	if err != nil || len(body) > maxReviewBytes {
		http.Error(w, "cannot read the review", http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	req := review.Request
	var resp *admissionv1.AdmissionResponse
	if req.Resource.Group != "" || req.Resource.Resource != "pods" || req.SubResource != "eviction" {
		resp = allowed() // a misconfigured webhook must not block anything else
	} else {
		resp = a.Admit(r.Context(), req)
	}
	resp.UID = req.UID
	out, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(out); err != nil {
		klog.V(2).InfoS("Cannot answer an eviction review", "err", err)
	}
}

func decodeEviction(raw []byte, into any) error {
	if len(raw) == 0 {
		return fmt.Errorf("no object")
	}
	return json.Unmarshal(raw, into)
}
